import HTTPCaching
import Hummingbird
import ImageCache

/// The pages' stylesheet and script, served by the app (``AssetsController``): the pages'
/// `Content-Security-Policy` allows no inline style, script or event handler.
enum Assets {
    /// `/assets/app.css`.
    static let stylesheet = Asset(contentType: "text/css; charset=utf-8", text: """
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
    .pager { display: flex; gap: 16px; justify-content: center; align-items: center; margin: 20px 0; }
    .details { display: flex; flex-wrap: wrap; gap: 28px; align-items: flex-start; }
    .details .art { background: #fff; border: 1px solid var(--line); border-radius: 12px; padding: 12px; }
    .details .art img { display: block; max-width: 100%; height: auto; }
    .error { max-width: 640px; margin: 10vh auto; background: #fff; border: 1px solid var(--line); border-radius: 12px; padding: 24px 28px; }
    .error h2 { margin-top: 0; color: var(--bad); }
    .notice { background: #fff4e5; color: var(--warn); border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
    code { background: #f0f0f6; padding: 1px 5px; border-radius: 4px; }
    .placeholder.large { width: 330px; height: 600px; }
    .counters i { font-style: normal; }
    /* A phone (320-430 px wide): nothing wider than the window, the counters on one line under short labels
       (scrolled sideways within the toolbar when they do not fit), two cards a row with the art filling its
       box, the buttons beside the title. */
    @media (max-width: 600px) {
      body { overflow-wrap: anywhere; }
      header { gap: 6px 10px; padding: 8px 10px; }
      header h1 { font-size: 16px; margin: 0; }
      .counters { order: 3; width: 100%; gap: 8px; font-size: 12px; white-space: nowrap; overflow-x: auto; scrollbar-width: none; }
      .counters i { font-size: 0; }
      .counters i::before { content: attr(data-short); font-size: 12px; }
      .actions { margin-left: auto; gap: 6px; }
      .actions button { font-size: 12px; padding: 4px 8px; }
      main { padding: 10px; }
      footer { padding: 0 10px 10px; }
      .grid { grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 10px; }
      .thumb { height: auto; aspect-ratio: 1 / 1; }
      .thumb img { width: auto; height: auto; max-width: 100%; max-height: 100%; }
      .placeholder { height: auto; aspect-ratio: 1 / 1; }
      .info { padding: 8px; }
      .placeholder.large { width: 100%; height: auto; aspect-ratio: 330 / 600; }
      .details .art { padding: 6px; }
    }
    """)

    /// `/assets/app.js`: live counters (`stats` events) on every page, the loading page's bar
    /// (`progress` and `phase` events), and a placeholder for an image that fails to load.
    static let script = Asset(contentType: "text/javascript; charset=utf-8", text: """
    // EmojiArt's pages: live counters and progress over server-sent events, and a placeholder for
    // an image that fails to load. Served by the app: its pages allow no inline script.
    (function () {
      "use strict";

      // An image that fails to load is replaced by the page's placeholder (template#unavailable):
      // a thumbnail's box (data-fallback="parent") or the image itself (data-fallback="self").
      // Error events do not bubble: they are caught on their way down, by a listener set before
      // any image exists (this script runs in the head).
      function showPlaceholder(image) {
        const template = document.getElementById("unavailable");
        if (!template) {
          // The template comes after the images: wait for the whole page.
          document.addEventListener("DOMContentLoaded", () => showPlaceholder(image), { once: true });
          return;
        }
        const target = image.dataset.fallback === "parent" ? image.parentNode : image;
        if (target && target.isConnected) { target.outerHTML = template.innerHTML; }
      }
      document.addEventListener("error", (event) => {
        const image = event.target;
        if (image instanceof HTMLImageElement && image.dataset.fallback) { showPlaceholder(image); }
      }, true);

      // The loading page's bar. Progress and phase come on separate streams: never let an older
      // count undo a newer one.
      function showProgress(p) {
        const bar = document.getElementById("progress");
        const completed = Math.max(Number(document.getElementById("completed").textContent) || 0, p.completed);
        bar.max = Math.max(p.total, 1);
        bar.value = completed;
        document.getElementById("total").textContent = p.total;
        document.getElementById("completed").textContent = completed;
      }

      document.addEventListener("DOMContentLoaded", () => {
        const events = new EventSource("/events");
        const counters = {
          memoryHits: "memory-hits", diskHits: "disk-hits", originFetches: "origin-fetches",
          revalidations: "revalidations", refreshed: "refreshed", staleAnswers: "stale-answers",
        };
        events.addEventListener("stats", (e) => {
          const stats = JSON.parse(e.data);
          for (const [name, id] of Object.entries(counters)) {
            const element = document.getElementById(id);
            if (element) { element.textContent = stats[name]; }
          }
          const warm = document.getElementById("warm-up");
          if (warm && stats.warmUp) { warm.textContent = stats.warmUp.text; }
        });
        if (document.getElementById("progress")) {
          events.addEventListener("progress", (e) => showProgress(JSON.parse(e.data)));
          events.addEventListener("phase", (e) => {
            const phase = JSON.parse(e.data);
            if (phase.progress.total > 0) { showProgress(phase.progress); }
            document.getElementById("phase").textContent = phase.text;
            if (phase.name === "ready" || phase.name === "failed") { setTimeout(() => location.reload(), 300); }
          });
        }
        window.emojiArtEvents = events;
      });
    })();
    """)
}

/// One served file: its bytes and their ETag, made once.
///
/// The tag is weak: the file leaves as is or gzip-compressed (``TextCompression``), and a weak
/// tag is the one validator RFC 9110 lets those two equivalent representations share, so a 200
/// of either and the 304 that revalidates it carry the same tag.
struct Asset: Sendable {
    let contentType: String
    let body: ByteBuffer
    let etag: String

    init(contentType: String, text: String) {
        self.contentType = contentType
        body = ByteBuffer(string: text)
        etag = "W/\"" + SHA256Hex.digest(Array(text.utf8)).prefix(32) + "\""
    }
}

/// `GET /assets/app.css` and `GET /assets/app.js` (and `HEAD`), revalidated by ETag: a new
/// build's assets reach the browser at its next page load. Both answers, 200 and 304, say
/// `Vary: Accept-Encoding`, as RFC 9110 asks of a 304: the compressor, which adds it to a 200,
/// cannot tell a 304's content type.
struct AssetsController<Context: RequestContext>: Sendable {
    var endpoints: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("assets/app.css") { request, _ in Self.answer(Assets.stylesheet, request) }
        routes.get("assets/app.js") { request, _ in Self.answer(Assets.script, request) }
        return routes
    }

    static func answer(_ asset: Asset, _ request: Request) -> Response {
        var headers: HTTPFields = [.eTag: asset.etag, .cacheControl: "no-cache", .vary: "Accept-Encoding"]
        if let ifNoneMatch = request.headers[.ifNoneMatch], ConditionalRequest.matches(ifNoneMatch, etag: asset.etag) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = asset.contentType
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: asset.body))
    }
}
