//! Fuzzes the client-side response decoder: no input may panic, the per-verb check agrees
//! with `Response::fits`, and whatever decodes re-encodes (in the service's form) to a
//! payload that decodes to the same response.

#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use mqstate::codec::{Response, Verb};

fuzz_target!(|data: &[u8]| {
    let payload = Bytes::copy_from_slice(data);
    let decoded = Response::decode(&payload);
    for verb in Verb::ALL {
        let for_verb = Response::decode_for(verb, &payload);
        match &decoded {
            Ok(r) if r.fits(verb) => assert_eq!(for_verb.as_ref(), Ok(r)),
            _ => assert!(for_verb.is_err()),
        }
    }
    let Ok(response) = decoded else {
        return;
    };
    let encoded = response.encode();
    assert_eq!(encoded.len(), response.encoded_len());
    assert_eq!(Response::decode(&encoded), Ok(response));
});
