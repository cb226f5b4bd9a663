"""Crypto-shredding: content encrypted at rest under per-version data keys, erased by destroying them.

* :mod:`.api` — the :class:`~.api.KeyStore` protocol (create, get, destroy, rotate the wrapping key);
* :mod:`.master` — the master key (``MEMSTEWARD_MASTER_KEY`` or a 0600 key file) that wraps every DEK;
* :mod:`.envelope` — AES-256-GCM sealing bound to (store id, artifact id, version, field);
* :mod:`.keyfile` — the embedded key store: a SQLite file beside the store;
* :mod:`.pgkeys` — the key store for many hosts: a table in a separate PostgreSQL database or schema;
* :mod:`.digests` — keyed digests (HMAC-SHA256, keyed BLAKE2b) under the store's index key;
* :mod:`.deepscan` — ``audit --deep``: one multi-pattern pass over each file for erased text.
"""
