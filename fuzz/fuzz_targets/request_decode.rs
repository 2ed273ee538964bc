//! Fuzzes the service-side request decoder: no input may panic, and whatever decodes must
//! re-encode to a payload that decodes to the same request.

#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use mqstate::codec::Request;

fuzz_target!(|data: &[u8]| {
    let payload = Bytes::copy_from_slice(data);
    let Ok(request) = Request::decode(&payload) else {
        return;
    };
    assert!(!request.key().is_empty(), "decoded an empty key");
    assert!(request.validate().is_ok());
    let encoded = request.encode();
    assert_eq!(encoded.len(), request.encoded_len());
    assert!(
        encoded.len() <= payload.len(),
        "canonical form is never longer"
    );
    assert_eq!(Request::decode(&encoded), Ok(request));
});
