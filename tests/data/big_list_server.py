"""A stdlib-only stdio MCP server whose tools/list answer is one huge message.

argv[1]: how many tools to list in the one page (default 1,000,000). Every other request
is answered with an empty result; the server also answers ``ping`` so a test can see that
the host still talks to it.
"""

import json
import sys


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            continue
        if method == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"],
                      "capabilities": {"tools": {}}, "serverInfo": {"name": "big", "version": "1"}}
        elif method == "tools/list":
            head = b'{"jsonrpc":"2.0","id":%s,"result":{"tools":[' % json.dumps(rid).encode()
            item = '{"name":"t%d","inputSchema":{"type":"object"}}'
            out.write(head)
            out.write(",".join(item % i for i in range(count)).encode())
            out.write(b"]}}\n")
            out.flush()
            continue
        else:
            result = {}
        out.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
