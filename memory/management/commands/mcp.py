"""`python manage.py mcp`: the memory tools as an MCP server (memory.api.mcp_server; R-TOOLS).

stdio (default): for a desktop client that launches the command; the agent key comes from
--key or MEMORY_API_KEY and is checked before serving. --http: streamable HTTP at
http://HOST:PORT/mcp, each request with its own `Authorization: Bearer <key>` (so --key is
refused there); loopback only unless --allow-remote.
"""

import os

import anyio
from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from mcp.server.stdio import stdio_server
from rest_framework.exceptions import AuthenticationFailed

from memory.api.mcp_http import MCP_PATH, is_loopback, serve_http
from memory.api.mcp_server import build_server, principal_for_raw_key

KEY_ENV = "MEMORY_API_KEY"


class Command(BaseCommand):
    help = "Serve the memory tools over MCP: stdio (default, key from --key or MEMORY_API_KEY) or --http on loopback."
    requires_system_checks: list = []  # stdout is the protocol's wire on stdio: nothing else may print there

    def add_arguments(self, parser):
        parser.add_argument("--key", default=None, help=f"the agent key for stdio (default: ${KEY_ENV})")
        parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
        parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
        parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
        parser.add_argument("--allow-remote", action="store_true",
                            help="allow a non-loopback --host (put TLS in front of it)")

    def handle(self, *args, key, http, host, port, allow_remote, **options):
        if http:
            if key is not None:
                raise CommandError("--key is for stdio only: over --http every request sends its own "
                                   "'Authorization: Bearer <agent key>' (drop --key, or drop --http)")
            if not is_loopback(host) and not allow_remote:
                raise CommandError(f"refusing to serve MCP on non-loopback host {host!r} without --allow-remote")
            if not 0 < port < 65536:
                raise CommandError(f"--port must be 1–65535, not {port}")
            self.stderr.write(f"MCP (streamable HTTP) on http://{host}:{port}{MCP_PATH}; "
                              "send 'Authorization: Bearer <agent key>' with each request")
            connections.close_all()
            serve_http(host=host, port=port)
            return
        raw_key = key or os.environ.get(KEY_ENV, "")
        if not raw_key:
            raise CommandError(f"no agent key: pass --key or set {KEY_ENV} (create one with: manage.py create_agent_key <team>)")
        try:
            principal = principal_for_raw_key(raw_key)
        except AuthenticationFailed as error:
            raise CommandError(f"the agent key was refused: {error.detail}") from error
        self.stderr.write(f"MCP (stdio) for team {principal.team.slug!r} as {principal.actor}")
        connections.close_all()  # the handlers use the worker thread's own connection
        server = build_server(raw_key=raw_key)

        async def serve() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(serve)
