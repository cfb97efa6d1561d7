//! JSON tools shared by protocols: the shape matcher and its matchers, the path subset,
//! case-insensitive binding, and the scan that finds where a string ends.

mod bind;
pub mod doc;
mod matchers;
pub(crate) mod number;
mod path;
mod shape;
mod string;

pub(crate) mod swar;

pub(crate) use doc::Lent;

pub use bind::bind;
pub use matchers::{IntoNumber, MATCHER_KEY, Matcher, json_value};
pub use path::{JsonPath, JsonPathError, PathSegment, fold_indices, fold_indices_into, push_member};
pub use shape::{
    JsonShapeMismatchError, PreparedShape, ShapeMismatch, ShapeOptions, ShapeReport, match_shape,
};
pub use string::read_string;
pub use swar::next_special;

#[cfg(test)]
mod tests;
