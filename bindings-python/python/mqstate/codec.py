"""The state store's payload codec: requests, responses and notifications, both directions.

The functions here are the Rust core's codec, so every mqstate language puts the same bytes
on the wire. Keys and values may be ``bytes``, ``bytearray``, ``memoryview`` or ``str``
(encoded as UTF-8); results are ``bytes``.

Client side (an application that publishes with its own MQTT client)::

    payload = encode_set(b"key", b"value", condition="NX", px_ms=10_000)
    # publish payload to mqstate.topics.REQUEST_TOPIC with a response topic, a
    # correlation id and the user property __ts = str(clock.tick()); later:
    response = decode_response(reply_payload, "SET")
    if response.kind == "error":
        response.raise_for_error()        # the StoreError subclass of its kind
    applied = response.kind == "ok"

SCAN (listing keys by glob pattern, one page per request)::

    payload = encode_scan(b"sensor/*")                  # the first page
    page = decode_response(reply_payload, "SCAN")      # kind "keys"
    keys, token = page.keys, page.token                # token None on the last page
    payload = encode_scan(b"sensor/*", token=token)    # the next page

Decoders:

- :func:`decode_response` returns a :class:`Response` whose ``kind`` is ``"ok"``,
  ``"not_applied"``, ``"not_found"``, ``"value"``, ``"count"``, ``"keys"`` (a SCAN page:
  ``keys`` and ``token``) or ``"error"``. A store
  error (``-ERR …``) is a decoded value, not an exception; only a payload that follows no
  response form raises :class:`~mqstate.errors.MalformedError`. With ``verb``, a form that
  verb cannot receive (a value in answer to SET) is malformed too.
- :func:`decode_notification` splits a notification's topic and payload into a
  :class:`Notification` (``client_id``, ``key``, ``kind`` ``"set"``/``"delete"``, ``value``).
- :func:`decode_request` is the service's side: it raises the
  :class:`~mqstate.errors.StoreError` subclass the service would answer with.

Encoders raise :class:`~mqstate.errors.InvalidArgumentError` for what the service would
refuse (an empty key, ``px_ms=0``, a condition other than ``"nx"`` or ``"nex"``, in any
case).
"""

from __future__ import annotations

from ._mqstate import (
    Notification,
    Request,
    Response,
    decode_notification,
    decode_request,
    decode_response,
    encode_del,
    encode_get,
    encode_keynotify,
    encode_notification,
    encode_response,
    encode_scan,
    encode_set,
    encode_vdel,
)

__all__ = [
    "Notification",
    "Request",
    "Response",
    "decode_notification",
    "decode_request",
    "decode_response",
    "encode_del",
    "encode_get",
    "encode_keynotify",
    "encode_notification",
    "encode_response",
    "encode_scan",
    "encode_set",
    "encode_vdel",
]
