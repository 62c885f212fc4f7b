//! Field-level differences between two versions of an object.
