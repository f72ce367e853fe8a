//! Lowering passes, one per file, each exposing one function named after the file.
//! `lower.rs` runs them in order; the `verify_` ones are checks that find user errors.

pub mod dump;
pub mod flatten_storage;
pub mod forward_stores;
pub mod fuse_loops;
pub mod hoist_shared_allocations;
pub mod hoist_tail_guards;
pub mod infer_bound;
pub mod inject_thread_sync;
pub mod inline_stages;
pub mod lower_cross_thread_reduction;
pub mod parallel_scan;
pub mod partition_loops;
pub mod reuse_output;
pub mod schedule_ops;
pub mod simplify;
pub mod split_host_device;
pub mod transpose_locals;
pub mod tree_combine;
pub mod unroll_loops;
pub mod unswitch_loops;
pub mod vectorize_loops;
pub mod verify_gpu_memory;
pub mod verify_loop_annotations;
