import Mustache

/// The web app's pages, as Mustache templates (HTML-escaped by default), with their stylesheet
/// and script served from the app (``Assets``): no inline script, style or handler, as the pages'
/// `Content-Security-Policy` requires; no framework, nothing fetched from elsewhere.
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
    <link rel="stylesheet" href="/assets/app.css">
    <script src="/assets/app.js"></script>
    </head>
    """

    static let toolbar = """
    <header>
      <h1><a href="/">🎨 EmojiArt</a></h1>
      <div class="counters" aria-live="polite">
        <span><i data-short="mem">memory hits</i> <b id="memory-hits">{{stats.memoryHits}}</b></span>
        <span><i data-short="disk">disk hits</i> <b id="disk-hits">{{stats.diskHits}}</b></span>
        <span><i data-short="origin">origin fetches</i> <b id="origin-fetches">{{stats.originFetches}}</b></span>
        <span><i data-short="304">not modified</i> <b id="revalidations">{{stats.revalidations}}</b></span>
        <span><i data-short="refr.">refreshed</i> <b id="refreshed">{{stats.refreshed}}</b></span>
        <span><i data-short="stale">stale</i> <b id="stale-answers">{{stats.staleAnswers}}</b></span>
        <span><i data-short="warm">warm-up</i> <b id="warm-up">{{warmUp}}</b></span>
        {{#instance}}<span><i data-short="inst.">instance</i> <b id="instance">{{instance}}</b></span>{{/instance}}
      </div>
      <div class="actions">
        <form method="post" action="/cache/clear-memory"><button id="clear-memory" type="submit">Clear memory cache</button></form>
        <form method="post" action="/cache/clear-disk"><button id="clear-disk" type="submit">Clear disk cache</button></form>
      </div>
    </header>
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
    </body>
    </html>
    """

    static let list = """
    {{> head}}
    <body>
    {{> toolbar}}
    <main>
      {{#notice}}<p class="notice" id="feed-notice">{{notice}}</p>{{/notice}}
      {{#feedAge}}<p class="{{feedAgeClass}}" id="feed-age">{{feedAge}}</p>{{/feedAge}}
      <p class="summary" id="summary">{{summary}}</p>
      <div class="grid" id="catalog">
      {{#cards}}
        <a class="card" href="/pieces/{{index}}" data-status="{{status}}">
          {{#showImage}}
          <div class="thumb"><img src="{{thumbURL}}" srcset="{{thumbURL}} 1x, {{thumb2xURL}} 2x" alt="{{name}}"
               width="{{thumbWidth}}" height="{{thumbHeight}}" decoding="async"{{#belowFirstScreen}} loading="lazy"{{/belowFirstScreen}}{{#firstRow}} fetchpriority="high"{{/firstRow}}
               data-fallback="parent"></div>
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
      {{#pager}}<nav class="pager" id="pager">{{#previous}}<a href="{{.}}" rel="prev">← Previous</a>{{/previous}}
        <span>Page {{page}} of {{pages}}</span>{{#next}}<a href="{{.}}" rel="next">Next →</a>{{/next}}</nav>{{/pager}}
      <template id="unavailable"><div class="placeholder" data-placeholder><span class="icon">🖼️</span><span>image unavailable</span></div></template>
    </main>
    <footer class="summary" id="feed-key">{{feedKeyText}} <code>{{feedKey}}</code></footer>
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
          {{#showImage}}<img id="large" src="{{largeURL}}" srcset="{{largeURL}} 1x, {{large2xURL}} 2x" alt="{{name}}"
               width="{{largeWidth}}" height="{{largeHeight}}" fetchpriority="high" data-fallback="self">{{/showImage}}
          {{^showImage}}<div class="placeholder large" data-placeholder><span class="icon">🖼️</span><span>{{placeholderText}}</span></div>{{/showImage}}
        </div>
        <div>
          <h2 id="name">{{name}}</h2>
          <p class="price" id="price">{{price}}</p>
          <p><span class="badge {{status}}">{{statusLabel}}</span></p>
          <p>{{explanation}}</p>
          <p class="summary">Piece {{piece}} · <code>{{url}}</code></p>
        </div>
      </div>
      <template id="unavailable"><div class="placeholder large" data-placeholder><span class="icon">🖼️</span><span>image unavailable</span></div></template>
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
