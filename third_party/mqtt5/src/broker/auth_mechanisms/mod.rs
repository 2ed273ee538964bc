#[cfg(feature = "auth-jwt-federated")]
pub mod jwks;
#[cfg(feature = "auth-jwt")]
pub mod jwt;
#[cfg(feature = "auth-jwt-federated")]
pub mod jwt_federated;
pub mod plain;
#[cfg(feature = "auth-scram")]
pub mod scram;

#[cfg(feature = "auth-jwt-federated")]
pub use jwks::{JwkKey, JwksCache, JwksEndpointConfig, JwksError};
#[cfg(feature = "auth-jwt")]
pub use jwt::{JwtAuthProvider, JwtClaims, JwtHeader, JwtVerifier};
#[cfg(feature = "auth-jwt-federated")]
pub use jwt_federated::FederatedJwtAuthProvider;
pub use plain::{PasswordCredentialStore, PlainAuthProvider};
#[cfg(feature = "auth-scram")]
pub use scram::{
    generate_scram_credential_line, generate_scram_credential_line_with_iterations,
    FileBasedScramCredentialStore, ScramCredentialStore, ScramCredentials, ScramSha256AuthProvider,
};
