//! The state store's payload codec (spec §3, §4, §7): pure, no I/O, both directions, so
//! the client and the local service share one implementation.
//!
//! - [`Request`]: encode (client) and decode (service, with the exact store errors).
//! - [`Response`]: decode (client, tolerant of the article's variants) and encode (service).
//! - [`ScanPage`]: one page of a SCAN's keys and its continuation token.
//! - [`KeyEvent`] / [`Notification`]: notification payloads and topics, both directions.
//! - [`StoreError`] / [`StoreErrorKind`]: the twelve error texts and their kinds.
//!
//! No input makes a decoder panic or allocate more than the input's size; values come back
//! as zero-copy [`bytes::Bytes`] slices of the payload.

mod notification;
mod request;
mod response;
mod scan;
mod store_error;
pub(crate) mod wire;

pub use crate::error::StoreErrorKind;
pub use notification::{KeyEvent, Notification};
pub use request::{Request, SetCondition, Verb};
pub use response::Response;
pub use scan::ScanPage;
pub use store_error::StoreError;
