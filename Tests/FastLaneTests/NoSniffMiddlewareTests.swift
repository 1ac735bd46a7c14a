import FastLane
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// The app's and the gallery's outermost middleware: every answer says `nosniff`, and what a
/// route throws is answered here, an `HTTPError` as Hummingbird answers it, anything else 500.
@Suite struct NoSniffMiddlewareTests {
    struct Unexpected: Error {}

    static func application() -> some ApplicationProtocol {
        let router = Router()
        router.middlewares.add(NoSniffMiddleware())
        router.get("text") { _, _ in "hello" }
        router.get("gone") { _, _ -> String in throw HTTPError(.gone, headers: [.cacheControl: "no-store"], message: "piece 3 is gone") }
        router.get("broken") { _, _ -> String in throw Unexpected() }
        return Application(router: router)
    }

    @Test func everyAnswerSaysNoSniffErrorsIncluded() async throws {
        try await Self.application().test(.router) { client in
            try await client.execute(uri: "/text", method: .get) { response in
                #expect(response.status == .ok && String(buffer: response.body) == "hello")
                #expect(response.headers[.xContentTypeOptions] == "nosniff")
            }
            try await client.execute(uri: "/gone", method: .get) { response in
                #expect(response.status == .gone && response.headers[.cacheControl] == "no-store", "the error's own answer")
                #expect(String(buffer: response.body).contains("piece 3 is gone"))
                #expect(response.headers[.xContentTypeOptions] == "nosniff")
            }
            try await client.execute(uri: "/broken", method: .get) { response in
                #expect(response.status == .internalServerError && response.body.readableBytes == 0)
                #expect(response.headers[.xContentTypeOptions] == "nosniff")
            }
            try await client.execute(uri: "/nowhere", method: .get) { response in
                #expect(response.status == .notFound, "the router's answer for a path no route has")
                #expect(response.headers[.xContentTypeOptions] == "nosniff")
            }
        }
    }
}
