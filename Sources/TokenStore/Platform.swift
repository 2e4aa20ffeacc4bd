import APNs

/// The operating system of an installation's phone, which decides the token kinds it may hold:
/// an iOS installation push-to-start and device tokens (APNs), an Android one an FCM token. An
/// installation never mixes them: a phone runs one system, and an installation that did would
/// be two phones under one id (one secret for both, one `updatedAt` keeping both alive). The
/// platform is not stored: it is the kind of the tokens the installation holds, so it cannot
/// disagree with them.
public enum Platform: String, Sendable, CaseIterable {
    case ios
    case android

    /// The platform whose phones hold tokens of `kind`.
    public init(kind: TokenKind) { self = kind == .fcm ? .android : .ios }

    /// The token kinds an installation of this platform holds.
    public var kinds: [TokenKind] { self == .android ? [.fcm] : TokenKind.apnsKinds }

    /// How users read it in messages ("an iOS installation").
    public var displayName: String { self == .android ? "Android" : "iOS" }
}

extension Installation {
    /// Throws unless the installation may take a token of `kind`: it holds no token of the other
    /// platform. The message names the installation, both platforms and the fix.
    public func checkPlatform(accepting kind: TokenKind) throws(StoreError) {
        let wanted = Platform(kind: kind)
        guard let platform, platform != wanted else { return }
        let held = platform.kinds.filter { token($0) != nil }.map(\.name).joined(separator: " and ")
        throw StoreError.invalid("installation '\(id)' is an \(platform.displayName) installation (its tokens: \(held)); "
            + "\(kind.name) tokens belong to \(wanted.displayName) installations: register that phone under its own installationId")
    }
}
