// Crypto — everything on mbedTLS.
// - SHA-256; one shared CTR_DRBG (`RandomSource`).
// - APNs provider tokens: `.p8` keys, ES256 signed deterministically (RFC 6979) on a 30-minute UTC
//   grid every process and node shares (a connection switches only after 20 minutes on a token, so
//   none presented is 50 minutes old: ProviderTokenSource.swift); clock-skew diagnosis of token
//   refusals; token verification.
// - FCM service accounts: RS256 (`RSASigningKey`: PKCS#8 as Google ships it, other layouts refused
//   saying what they are; `RSAVerifyingKey`; 2048-bit generation written as PKCS#8). Both key kinds
//   sit behind `JWSSigningKey`, so `CompactJWT.sign` is written once.
// - The simulator's throwaway CA with loopback certificates.
// - TLS configuration and `TLSStream` (mbedTLS over one socket, `package` access: its C pointers
//   never leave the module).
// Every mbedTLS return code goes through `MbedTLS.check`/`count`/`require`/`ignore`
// (Tests/SourceRuleTests enforces it).
