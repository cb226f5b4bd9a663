"""``memsteward mcp``: governed memory for any agent that speaks the Model Context Protocol.

Modules, one concept each:

* :mod:`~memsteward.mcp.tenant` — the tenant a server process serves and the ids it owns;
* :mod:`~memsteward.mcp.limits` — bounds on a request and the tool error;
* :mod:`~memsteward.mcp.memory` — the tenant's guarded view of a store;
* :mod:`~memsteward.mcp.graph` — the reference memory server's knowledge graph as artifacts;
* :mod:`~memsteward.mcp.governed` — record, search, forget preview/apply, correct, attest, audit, clear;
* :mod:`~memsteward.mcp.tools` — the tool table (schemas, annotations, handlers);
* :mod:`~memsteward.mcp.server` — the SDK server: tools, resources, error rules;
* :mod:`~memsteward.mcp.transports` — stdio and streamable HTTP (bind, bearer token, body limit).

Needs the optional extra: ``pip install 'memsteward[mcp]'`` (the official ``mcp`` SDK).
"""
