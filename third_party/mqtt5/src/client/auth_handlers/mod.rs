pub mod jwt;
pub mod plain;
pub mod scram;

pub use jwt::JwtAuthHandler;
pub use plain::PlainAuthHandler;
pub use scram::ScramSha256AuthHandler;
