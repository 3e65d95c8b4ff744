"""The dialing engine's side: /engine/claim, bridge, call-connected, settle and agent-state (README,
"The engine API"), opened by ENGINE_SECRET only."""
