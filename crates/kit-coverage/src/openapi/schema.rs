//! The field denominator: which response fields a schema declares.
//!
//! Counting every path a schema allows is not finite on recursive schemas, and not useful on
//! Stripe's expandable ones (126.7 million paths). The kit counts, for one response schema:
//!
//! - every property of the schema, at any depth of inline nesting up to
//!   [`MAX_MEMBER_DEPTH`] members (`$.a.b.c…`);
//! - the properties of schemas it references by `$ref` from a property (or from an array
//!   under one): [`MAX_REF_HOPS`] such hop — the resource and the resources embedded in it,
//!   not what those embed in turn (the reference itself still counts as a field);
//! - through `allOf`, `oneOf` and `anyOf` alike (their union), and array items (`$.items[].sku`);
//!   these never count as a hop;
//! - never entering a schema already being expanded on the same path (a cycle).
//!
//! `additionalProperties` and `patternProperties` name no field and count for nothing.

use std::collections::BTreeSet;
use std::sync::Arc;

use kit_core::json::doc::{self, Node};
use kit_core::json::push_member;
use rustc_hash::FxHashMap;

use super::refs::{self, Doc, RefError};

/// Members deep, at most, a counted field is.
pub const MAX_MEMBER_DEPTH: usize = 8;
/// `$ref`s crossed from a property, at most, on the way to a counted field.
pub const MAX_REF_HOPS: usize = 1;

/// Computes field sets, remembering those of schemas reached by reference.
pub(crate) struct Fields<'r, 'd> {
    doc: &'r Doc<'d>,
    /// Field sets of whole response schemas, by the address of the schema they resolve to.
    memo: FxHashMap<*const Node<'d>, Arc<[String]>>,
}

impl<'r, 'd> Fields<'r, 'd> {
    pub(crate) fn new(doc: &'r Doc<'d>) -> Self {
        Fields {
            doc,
            memo: FxHashMap::default(),
        }
    }

    /// The fields of the response schemas given (several media types), merged.
    pub(crate) fn of(&mut self, schemas: &[&'d Node<'d>]) -> Arc<[String]> {
        match schemas {
            [] => Arc::from(Vec::new()),
            [one] => self.of_one(one),
            many => {
                let mut all = BTreeSet::new();
                for schema in many {
                    all.extend(self.of_one(schema).iter().cloned());
                }
                all.into_iter().collect()
            }
        }
    }

    fn of_one(&mut self, schema: &'d Node<'d>) -> Arc<[String]> {
        let own = schema as *const Node<'d>;
        // A schema with keywords beside its `$ref` (3.1) is its own key, not the target's.
        let key = if is_pure_reference(schema) {
            self.doc.follow(schema).map_or(own, |s| s as *const Node<'d>)
        } else {
            own
        };
        if let Some(found) = self.memo.get(&key) {
            return Arc::clone(found);
        }
        let mut walk = Walk {
            doc: self.doc,
            fields: BTreeSet::new(),
            expanding: Vec::new(),
            path: String::from("$"),
        };
        walk.schema(schema, 0, 0, false);
        let fields: Arc<[String]> = walk.fields.into_iter().collect();
        self.memo.insert(key, Arc::clone(&fields));
        fields
    }
}

fn is_pure_reference(schema: &Node<'_>) -> bool {
    schema
        .as_object()
        .is_some_and(|o| doc::distinct(o).all(|(name, _)| name == "$ref") && schema.get("$ref").is_some())
}

struct Walk<'r, 'd> {
    doc: &'r Doc<'d>,
    fields: BTreeSet<String>,
    /// Schemas being expanded on the current path, by address.
    expanding: Vec<*const Node<'d>>,
    path: String,
}

impl<'d> Walk<'_, 'd> {
    /// Walks `schema` at `depth` members, having crossed `hops` references from properties.
    /// `next_ref_is_hop`: the schema sits under a property and no `$ref` has been crossed
    /// since, so following one now is a hop.
    fn schema(&mut self, schema: &'d Node<'d>, depth: usize, hops: usize, next_ref_is_hop: bool) {
        let mut hops = hops;
        let mut next_ref_is_hop = next_ref_is_hop;
        // The schema and the chain of what it references: keywords of each apply (3.1 allows
        // keywords beside `$ref`).
        let mut chain: Vec<&'d Node<'d>> = vec![schema];
        let mut current = schema;
        let entered = self.expanding.len();
        while let Some(reference) = refs::reference_of(current) {
            let target = match self.doc.resolve(reference) {
                Ok(target) => target,
                Err(RefError::External | RefError::Dangling) => break,
            };
            let address = target as *const Node<'d>;
            if self.expanding.contains(&address) || self.expanding.len() >= refs::MAX_CHAIN {
                break;
            }
            if next_ref_is_hop && depth > 0 {
                hops += 1;
                next_ref_is_hop = false;
                if hops > MAX_REF_HOPS {
                    break;
                }
            }
            self.expanding.push(address);
            chain.push(target);
            current = target;
        }
        // What was not entered (a hop too many, a cycle) contributes nothing; the property
        // naming it was counted by the caller.
        for part in &chain {
            self.keywords(part, depth, hops, next_ref_is_hop);
        }
        self.expanding.truncate(entered);
    }

    fn keywords(&mut self, schema: &'d Node<'d>, depth: usize, hops: usize, next_ref_is_hop: bool) {
        let Some(object) = schema.as_object() else {
            return;
        };
        // One pass over the schema's own keys rather than a lookup per keyword (six per
        // schema, each a scan). The order keywords are walked in does not change the set of
        // fields.
        for (keyword, value) in doc::distinct(object) {
            match (keyword, value) {
                ("allOf" | "oneOf" | "anyOf", Node::Array(parts)) => {
                    for part in parts {
                        self.schema(part, depth, hops, next_ref_is_hop);
                    }
                }
                ("properties", Node::Object(properties)) => {
                    for (name, property) in doc::distinct(properties) {
                        let len = self.path.len();
                        push_member(&mut self.path, name);
                        if !self.fields.contains(&self.path) {
                            self.fields.insert(self.path.clone());
                        }
                        if depth + 1 < MAX_MEMBER_DEPTH {
                            self.schema(property, depth + 1, hops, true);
                        }
                        self.path.truncate(len);
                    }
                }
                ("items", item) => self.item(item, depth, hops, next_ref_is_hop),
                ("prefixItems", Node::Array(items)) => {
                    for item in items {
                        self.item(item, depth, hops, next_ref_is_hop);
                    }
                }
                _ => {}
            }
        }
    }

    /// An array's item schema, under `[]`.
    fn item(&mut self, item: &'d Node<'d>, depth: usize, hops: usize, next_ref_is_hop: bool) {
        if item.is_object() {
            let len = self.path.len();
            self.path.push_str("[]");
            self.schema(item, depth, hops, next_ref_is_hop);
            self.path.truncate(len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn fields(doc: &Value, schema: &Value) -> Vec<String> {
        let (doc, schema) = (Node::from_value(doc), Node::from_value(schema));
        Fields::new(&Doc::new(&doc)).of(&[&schema]).to_vec()
    }

    #[test]
    fn inline_properties_items_and_composition() {
        let doc = json!({});
        let schema = json!({
            "type": "object",
            "properties": {
                "id": { "type": "integer" },
                "lines": { "type": "array", "items": { "properties": { "sku": {}, "qty": {} } } },
                "meta": { "allOf": [ { "properties": { "a": {} } }, { "properties": { "b": {} } } ] },
                "either": { "oneOf": [ { "properties": { "x": {} } }, { "type": "string" } ] },
                "map": { "additionalProperties": { "properties": { "no": {} } } }
            }
        });
        assert_eq!(
            fields(&doc, &schema),
            [
                "$.either",
                "$.either.x",
                "$.id",
                "$.lines",
                "$.lines[].qty",
                "$.lines[].sku",
                "$.map",
                "$.meta",
                "$.meta.a",
                "$.meta.b"
            ]
        );
    }

    #[test]
    fn one_hop_from_a_property_and_free_composition_inside_it() {
        let doc = json!({ "components": { "schemas": {
            "Order": { "properties": { "id": {}, "customer": { "$ref": "#/components/schemas/Customer" },
                "lines": { "type": "array", "items": { "$ref": "#/components/schemas/Line" } } } },
            "Customer": { "allOf": [ { "$ref": "#/components/schemas/Named" } ],
                "properties": { "address": { "$ref": "#/components/schemas/Address" } } },
            "Named": { "properties": { "name": {} } },
            "Address": { "properties": { "city": {} } },
            "Line": { "properties": { "sku": {}, "product": { "$ref": "#/components/schemas/Address" } } }
        } } });
        let schema = json!({ "$ref": "#/components/schemas/Order" });
        assert_eq!(
            fields(&doc, &schema),
            [
                "$.customer",
                "$.customer.address",
                "$.customer.name",
                "$.id",
                "$.lines",
                "$.lines[].product",
                "$.lines[].sku"
            ]
        );
    }

    #[test]
    fn recursion_stops_where_a_schema_would_enter_itself() {
        let doc = json!({ "components": { "schemas": {
            "Node": { "properties": { "value": {}, "children": { "type": "array", "items": { "$ref": "#/components/schemas/Node" } },
                "self": { "allOf": [ { "$ref": "#/components/schemas/Node" } ] } } }
        } } });
        let schema = json!({ "type": "array", "items": { "$ref": "#/components/schemas/Node" } });
        assert_eq!(fields(&doc, &schema), ["$[].children", "$[].self", "$[].value"]);
    }

    #[test]
    fn inline_nesting_stops_at_the_member_limit() {
        let mut schema = json!({ "type": "string" });
        for _ in 0..20 {
            schema = json!({ "properties": { "a": schema } });
        }
        let found = fields(&json!({}), &schema);
        assert_eq!(found.len(), MAX_MEMBER_DEPTH);
        assert_eq!(
            found.last().map(|f| f.matches(".a").count()),
            Some(MAX_MEMBER_DEPTH)
        );
    }

    #[test]
    fn keywords_beside_a_reference_count_and_unresolvable_references_stop_quietly() {
        let doc = json!({ "$defs": { "A": { "properties": { "a": {} } } } });
        let schema =
            json!({ "$ref": "#/$defs/A", "properties": { "b": {}, "c": { "$ref": "other.yaml#/X" } } });
        assert_eq!(fields(&doc, &schema), ["$.a", "$.b", "$.c"]);
    }

    #[test]
    fn tuple_items_count_under_the_array_and_boolean_items_count_nothing() {
        let schema = json!({
            "properties": {
                "pair": { "type": "array", "prefixItems": [
                    { "properties": { "key": {} } },
                    { "properties": { "value": {} } },
                    true
                ], "items": false },
                "tags": { "type": "array", "items": true }
            }
        });
        assert_eq!(
            fields(&json!({}), &schema),
            ["$.pair", "$.pair[].key", "$.pair[].value", "$.tags"]
        );
    }
}
