//! Types shared by the hetpilot manager and agents.
