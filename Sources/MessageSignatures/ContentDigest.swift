import Crypto
public import Foundation
import RawStructuredFieldValues

/// RFC 9530 `Content-Digest` with `sha-256`: the field the feed's signature covers, so the
/// signature vouches for the body's bytes.
public enum ContentDigest {
    /// The field value for `body`: `sha-256=:BASE64:`.
    public static func fieldValue(for body: some DataProtocol) -> String {
        let digest = Data(SHA256.hash(data: body)).base64EncodedString()
        var serializer = StructuredFieldValueSerializer()
        let bytes = (try? serializer.writeDictionaryFieldValue(["sha-256": .item(Item(bareItem: RFC9651BareItem.undecodedByteSequence(digest), parameters: [:]))])) ?? []
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Checks that `fieldValue` carries a `sha-256` digest and that it is the digest of `body`.
    /// - Throws: ``SignatureFailure/missingDigest`` or ``SignatureFailure/digestMismatch``.
    public static func verify(_ fieldValue: String?, body: some DataProtocol) throws(SignatureFailure) {
        guard let fieldValue else { throw .missingDigest }
        var parser = StructuredFieldValueParser(Array(fieldValue.utf8))
        guard let dictionary = try? parser.parseDictionaryFieldValue(),
              case let .item(item)? = dictionary["sha-256"],
              case let .undecodedByteSequence(encoded) = item.rfc9651BareItem,
              let claimed = Data(base64Encoded: encoded)
        else { throw .missingDigest }
        guard claimed == Data(SHA256.hash(data: body)) else { throw .digestMismatch }
    }
}
