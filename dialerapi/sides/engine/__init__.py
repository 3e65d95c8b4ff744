"""The dialing engine's side: /engine/claim, bridge, call-connected, settle and agent-state
(docs/engine/api.md), opened by ENGINE_SECRET only."""
