"""``python -m mqstate``: the version, or a tiny get / set / delete against a store.

    python -m mqstate                      # prints the version
    python -m mqstate URL get KEY          # prints the value (exit 1 when missing)
    python -m mqstate URL set KEY VALUE    # prints the new version
    python -m mqstate URL delete KEY       # prints the number of keys deleted
"""

from __future__ import annotations

import sys
from typing import List, Optional

from . import __version__
from .client import Client
from .errors import MqstateError


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-V", "--version", "version"):
        print(f"mqstate {__version__}")
        return 0
    if args[0] in ("-h", "--help") or len(args) < 3:
        print(__doc__.strip())
        return 0 if args[0] in ("-h", "--help") else 2
    url, command, key, *rest = args
    try:
        with Client(url, connect_timeout=5, request_timeout=5) as client:
            if command == "get" and not rest:
                value = client.get(key)
                if value is None:
                    print(f"{key}: not found", file=sys.stderr)
                    return 1
                sys.stdout.buffer.write(value.value + b"\n")
                return 0
            if command == "set" and len(rest) == 1:
                result = client.set(key, rest[0])
                print(result.version)
                return 0
            if command in ("delete", "del") and not rest:
                print(client.delete(key))
                return 0
    except MqstateError as e:
        print(f"mqstate: {e} [{e.code}]", file=sys.stderr)
        return 3
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
