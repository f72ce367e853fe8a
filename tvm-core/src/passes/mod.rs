//! Lowering passes, one per file.
