import Mustache

/// The web app's pages, as Mustache templates (HTML-escaped by default), plain CSS and plain
/// JavaScript: no framework, nothing fetched from elsewhere.
enum Templates {
    static func library() throws -> MustacheLibrary {
        var library = MustacheLibrary()
        try library.register(head, named: "head")
        try library.register(toolbar, named: "toolbar")
        try library.register(loading, named: "loading")
        try library.register(list, named: "list")
        try library.register(details, named: "details")
        try library.register(error, named: "error")
        return library
    }

    static let head = """
    <!DOCTYPE html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>{{title}} · EmojiArt</title>
    <style>
    :root { --ink: #1d1d2b; --muted: #6b6b80; --line: #e4e4ee; --accent: #6d4aff; --bad: #c62828; --warn: #b26a00; }
    * { box-sizing: border-box; }
    body { margin: 0; font: 15px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #f7f7fb; }
    header { position: sticky; top: 0; z-index: 2; display: flex; flex-wrap: wrap; gap: 12px; align-items: center;
             padding: 10px 20px; background: #fff; border-bottom: 1px solid var(--line); }
    header h1 { font-size: 18px; margin: 0 12px 0 0; }
    header h1 a { color: inherit; text-decoration: none; }
    .counters { display: flex; gap: 14px; color: var(--muted); font-variant-numeric: tabular-nums; }
    .counters b { color: var(--ink); }
    .actions { margin-left: auto; display: flex; gap: 8px; }
    button { font: inherit; padding: 6px 12px; border-radius: 8px; border: 1px solid var(--line); background: #fff; cursor: pointer; }
    button:hover { border-color: var(--accent); color: var(--accent); }
    button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
    main { padding: 20px; max-width: 1200px; margin: 0 auto; }
    footer { padding: 0 20px 20px; max-width: 1200px; margin: 0 auto; }
    .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(180px, 1fr)); gap: 16px; }
    .card { display: block; background: #fff; border: 1px solid var(--line); border-radius: 12px; overflow: hidden;
            color: inherit; text-decoration: none; transition: box-shadow .15s; }
    .card:hover { box-shadow: 0 4px 16px rgba(0,0,0,.08); }
    .thumb { height: 200px; display: flex; align-items: center; justify-content: center; background: #f0f0f6; }
    .thumb img { max-width: 100%; max-height: 200px; }
    .placeholder { height: 200px; display: flex; flex-direction: column; align-items: center; justify-content: center;
                   gap: 6px; color: var(--muted); background: repeating-linear-gradient(45deg, #f0f0f6, #f0f0f6 10px, #e9e9f1 10px, #e9e9f1 20px); }
    .placeholder .icon { font-size: 32px; }
    .info { padding: 10px 12px; }
    .name { font-weight: 600; }
    .price { color: var(--muted); font-variant-numeric: tabular-nums; }
    .badge { display: inline-block; font-size: 12px; padding: 1px 8px; border-radius: 99px; margin-top: 4px; }
    .badge.verified { background: #e6f4ea; color: #1e7b34; }
    .badge.mismatch, .badge.failed { background: #fdecea; color: var(--bad); }
    .badge.missing { background: #fff4e5; color: var(--warn); }
    .loading { max-width: 560px; margin: 12vh auto; text-align: center; }
    progress { width: 100%; height: 18px; accent-color: var(--accent); }
    .summary { color: var(--muted); margin: 0 0 16px; }
    .details { display: flex; flex-wrap: wrap; gap: 28px; align-items: flex-start; }
    .details .art { background: #fff; border: 1px solid var(--line); border-radius: 12px; padding: 12px; }
    .details .art img { display: block; max-width: 100%; }
    .error { max-width: 640px; margin: 10vh auto; background: #fff; border: 1px solid var(--line); border-radius: 12px; padding: 24px 28px; }
    .error h2 { margin-top: 0; color: var(--bad); }
    .notice { background: #fff4e5; color: var(--warn); border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
    code { background: #f0f0f6; padding: 1px 5px; border-radius: 4px; }
    </style>
    </head>
    """

    static let toolbar = """
    <header>
      <h1><a href="/">🎨 EmojiArt</a></h1>
      <div class="counters" aria-live="polite">
        <span>memory hits <b id="memory-hits">{{stats.memoryHits}}</b></span>
        <span>disk hits <b id="disk-hits">{{stats.diskHits}}</b></span>
        <span>origin fetches <b id="origin-fetches">{{stats.originFetches}}</b></span>
        <span>not modified <b id="revalidations">{{stats.revalidations}}</b></span>
        <span>refreshed <b id="refreshed">{{stats.refreshed}}</b></span>
        <span>stale <b id="stale-answers">{{stats.staleAnswers}}</b></span>
        {{#instance}}<span>instance <b id="instance">{{instance}}</b></span>{{/instance}}
      </div>
      <div class="actions">
        <form method="post" action="/cache/clear-memory"><button id="clear-memory" type="submit">Clear memory cache</button></form>
        <form method="post" action="/cache/clear-disk"><button id="clear-disk" type="submit">Clear disk cache</button></form>
      </div>
    </header>
    <script>
    (function () {
      const events = new EventSource("/events");
      events.addEventListener("stats", (e) => {
        const s = JSON.parse(e.data);
        document.getElementById("memory-hits").textContent = s.memoryHits;
        document.getElementById("disk-hits").textContent = s.diskHits;
        document.getElementById("origin-fetches").textContent = s.originFetches;
        document.getElementById("revalidations").textContent = s.revalidations;
        document.getElementById("refreshed").textContent = s.refreshed;
        document.getElementById("stale-answers").textContent = s.staleAnswers;
      });
      window.emojiArtEvents = events;
    })();
    </script>
    """

    static let loading = """
    {{> head}}
    <body>
    {{> toolbar}}
    <main class="loading">
      <h2>Verifying the gallery</h2>
      <p id="phase">{{phaseText}}</p>
      <progress id="progress" max="{{progress.total}}" value="{{progress.completed}}"></progress>
      <p><span id="completed">{{progress.completed}}</span> of <span id="total">{{progress.total}}</span> images checked</p>
    </main>
    <script>
    (function () {
      const events = window.emojiArtEvents;
      // Progress and phase come on separate streams: never let an older count undo a newer one.
      function show(p) {
        const bar = document.getElementById("progress");
        const completed = Math.max(Number(document.getElementById("completed").textContent) || 0, p.completed);
        bar.max = Math.max(p.total, 1);
        bar.value = completed;
        document.getElementById("total").textContent = p.total;
        document.getElementById("completed").textContent = completed;
      }
      events.addEventListener("progress", (e) => show(JSON.parse(e.data)));
      events.addEventListener("phase", (e) => {
        const phase = JSON.parse(e.data);
        if (phase.progress.total > 0) { show(phase.progress); }
        document.getElementById("phase").textContent = phase.text;
        if (phase.name === "ready" || phase.name === "failed") { setTimeout(() => location.reload(), 300); }
      });
    })();
    </script>
    </body>
    </html>
    """

    static let list = """
    {{> head}}
    <body>
    {{> toolbar}}
    <main>
      {{#notice}}<p class="notice" id="feed-notice">{{notice}}</p>{{/notice}}
      <p class="summary" id="summary">{{summary}}</p>
      <div class="grid" id="catalog">
      {{#cards}}
        <a class="card" href="/pieces/{{index}}" data-status="{{status}}">
          {{#showImage}}
          <div class="thumb"><img src="/thumbs/{{piece}}{{thumbQuery}}" alt="{{name}}" width="{{thumbWidth}}" height="{{thumbHeight}}"
               onerror="this.parentNode.outerHTML = document.getElementById('unavailable').innerHTML"></div>
          {{/showImage}}
          {{^showImage}}
          <div class="placeholder" data-placeholder><span class="icon">🖼️</span><span>{{placeholderText}}</span></div>
          {{/showImage}}
          <div class="info">
            <div class="name">{{name}}</div>
            <div class="price">{{price}}</div>
            {{#marked}}<span class="badge {{status}}">{{statusLabel}}</span>{{/marked}}
          </div>
        </a>
      {{/cards}}
      </div>
      <template id="unavailable"><div class="placeholder" data-placeholder><span class="icon">🖼️</span><span>image unavailable</span></div></template>
    </main>
    <footer class="summary" id="feed-key">Feed authenticated with the gallery's Ed25519 key <code>{{feedKey}}</code></footer>
    </body>
    </html>
    """

    static let details = """
    {{> head}}
    <body>
    {{> toolbar}}
    <main>
      <p><a href="/">← Back to the catalog</a></p>
      <div class="details">
        <div class="art">
          {{#showImage}}<img id="large" src="/large/{{piece}}{{largeQuery}}" alt="{{name}}"
             onerror="this.outerHTML = document.getElementById('unavailable').innerHTML">{{/showImage}}
          {{^showImage}}<div class="placeholder" data-placeholder style="width:330px;height:600px"><span class="icon">🖼️</span><span>{{placeholderText}}</span></div>{{/showImage}}
        </div>
        <div>
          <h2 id="name">{{name}}</h2>
          <p class="price" id="price">{{price}}</p>
          <p><span class="badge {{status}}">{{statusLabel}}</span></p>
          <p>{{explanation}}</p>
          <p class="summary">Piece {{piece}} · <code>{{url}}</code></p>
        </div>
      </div>
      <template id="unavailable"><div class="placeholder" data-placeholder style="width:330px;height:600px"><span class="icon">🖼️</span><span>image unavailable</span></div></template>
    </main>
    </body>
    </html>
    """

    static let error = """
    {{> head}}
    <body>
    {{> toolbar}}
    <main>
      <div class="error">
        <h2>{{heading}}</h2>
        <p id="message">{{message}}</p>
        {{#retry}}<form method="post" action="/retry"><button class="primary" id="retry" type="submit">Retry</button></form>{{/retry}}
        {{^retry}}<p><a href="/">Back to the catalog</a></p>{{/retry}}
      </div>
    </main>
    </body>
    </html>
    """
}
