"""Topic names of the state store, and the hex encoding used in notification topics.

- :data:`REQUEST_TOPIC`: where requests are published.
- :func:`response_topic`: a client's default response topic.
- :func:`notification_filter`: subscribe to it before the first KEYNOTIFY.
- :func:`notification_topic` / :func:`parse_notification_topic`: a notification's topic
  names the client (hex) and the key (hex); parsing raises
  :class:`~mqstate.errors.MalformedError`.
- :func:`check_response_topic` raises :class:`~mqstate.errors.InvalidArgumentError` for a
  response topic the service would disconnect the client for (the request topic, the
  notification prefix, empty, wildcards); :func:`is_response_topic_allowed` answers the same
  question with a bool.
- :func:`hex_encode` (upper case) and :func:`hex_decode` (either case).
"""

from __future__ import annotations

from ._mqstate import (
    NOTIFICATION_PREFIX,
    REQUEST_TOPIC,
    SERVICE_ID,
    check_response_topic,
    hex_decode,
    hex_encode,
    is_response_topic_allowed,
    notification_filter,
    notification_topic,
    parse_notification_topic,
    response_topic,
)

__all__ = [
    "NOTIFICATION_PREFIX",
    "REQUEST_TOPIC",
    "SERVICE_ID",
    "check_response_topic",
    "hex_decode",
    "hex_encode",
    "is_response_topic_allowed",
    "notification_filter",
    "notification_topic",
    "parse_notification_topic",
    "response_topic",
]
