//! Field-level differences between two versions of an object.
//!
//! This part: field paths ([`FieldPath`]), one-line value rendering ([`render_value`])
//! and field ownership from managedFields ([`field_manager`]).

mod owner;
mod path;
mod render;

pub use owner::{FieldOwner, field_manager, field_owner};
pub use path::{FieldPath, PathError, PathSegment, parse_path};
pub use render::render_value;
