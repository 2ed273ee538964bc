//! A tour of the pure layers: encode a SET as a client would, decode it as the service
//! would, answer it, and decode the answer; tick and merge the hybrid logical clock.
//!
//! `cargo run -p mqstate --example codec_tour`

use std::num::NonZeroU64;

use bytes::Bytes;
use mqstate::codec::{Request, Response, SetCondition};
use mqstate::hlc::Hlc;
use mqstate::topics;

fn show(label: &str, bytes: &[u8]) {
    println!("{label:>10}: {}", bytes.escape_ascii());
}

fn main() -> Result<(), mqstate::Error> {
    let client_id = "tour-client";
    println!("request topic : {}", topics::REQUEST_TOPIC);
    println!("response topic: {}", topics::response_topic(client_id));
    println!(
        "notify filter : {}\n",
        topics::notification_filter(client_id)
    );

    // The client ticks its clock for the request's `__ts`.
    let now = 1_696_374_425_000;
    let client_clock = Hlc::new(now, 0, "CLIENT")?.tick(now, 60_000)?;
    println!("client __ts   : {client_clock}");

    let request: Request<&[u8]> = Request::Set {
        key: b"lock/pump-3",
        value: b"gateway-a",
        condition: SetCondition::NotExistsOrEqual,
        expiry_ms: NonZeroU64::new(10_000),
    };
    let payload = request.encode();
    show("request", &payload);

    // The service decodes it, applies it, and answers with a newer version.
    let decoded = Request::decode(&payload).map_err(mqstate::Error::from)?;
    println!(
        "   decoded: {:?} key={}",
        decoded.verb(),
        decoded.key().escape_ascii()
    );
    let service_clock = Hlc::new(now, 0, "StateStore")?.receive(&client_clock, now, 60_000)?;
    let answer = Response::Ok.encode();
    show("response", &answer);

    // The client decodes the answer and merges the version into its clock.
    let response = Response::decode(&answer)?;
    let merged = client_clock.receive(&service_clock, now, 60_000)?;
    println!("    result: {response:?}, version {service_clock}, client clock now {merged}");

    // A store error keeps its exact text and becomes a typed error.
    let err_payload = Bytes::from_static(b"-ERR a fencing token is required for this request\r\n");
    if let Response::Error(e) = Response::decode(&err_payload)? {
        let err = mqstate::Error::from(e);
        println!(
            "     error: kind={} message={:?}",
            err.kind(),
            err.message()
        );
    }
    Ok(())
}
