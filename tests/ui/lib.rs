//! Nothing: the package exists for its test, `ui.rs`.
