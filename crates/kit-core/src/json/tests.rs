//! The shape rules and every matcher, on documents; the REST crate's tests repeat the rules
//! against real responses.

use serde_json::{Value, json};

use super::*;

/// Matches both ways, on the tree and on its text, and checks that the text's report is the
/// report on the text's own tree (serde_json's default float parsing may read a written float
/// back one bit off, so that tree can differ from `actual`).
fn report(shape: &Value, actual: &Value, options: &ShapeOptions) -> ShapeReport {
    let on_tree = match_shape(shape, actual, options);
    let text = actual.to_string();
    let text_tree: Value = serde_json::from_str(&text).expect("the document is JSON");
    let on_text = PreparedShape::new(shape.clone())
        .matches_slice(text.as_bytes(), options)
        .expect("the document is JSON");
    assert_eq!(
        on_text,
        match_shape(shape, &text_tree, options),
        "matching the text of {text} against {shape}"
    );
    // The text alone answers every match, and only matches.
    let text_only = PreparedShape::new(shape.clone())
        .try_matches_slice(text.as_bytes(), options)
        .expect("the document is JSON");
    assert_eq!(
        text_only.as_ref(),
        on_text.is_match().then_some(&on_text),
        "the text alone, {text} against {shape}"
    );
    on_tree
}

#[test]
fn a_prepared_shape_reports_alike_however_many_paths_its_last_match_had() {
    let shape = json!({ "id": 1, "tags": json_value::each(json_value::any_string()) });
    let prepared = PreparedShape::new(shape.clone());
    let options = ShapeOptions::default();
    for tags in [5, 0, 9, 9, 3] {
        let body = json!({ "id": 1, "tags": vec!["t"; tags] });
        let text = body.to_string();
        let on_text = prepared.matches_slice(text.as_bytes(), &options).unwrap();
        let on_tree = prepared.matches(&body, &options);
        assert_eq!(on_text, match_shape(&shape, &body, &options), "{tags} tags");
        assert_eq!(on_tree, on_text, "{tags} tags");
        assert_eq!(on_text.matched.len(), tags + 2, "each tag, the list and the id");
    }
    // The last match had as many paths: the report was made with room for them, not grown.
    let again = prepared
        .matches_slice(
            json!({ "id": 1, "tags": ["a", "b", "c"] }).to_string().as_bytes(),
            &options,
        )
        .unwrap();
    assert_eq!(again.matched.capacity(), again.matched.len());
}

fn mismatches(shape: Value, actual: Value, options: ShapeOptions) -> Vec<String> {
    report(&shape, &actual, &options)
        .mismatches
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn partial(shape: Value, actual: Value) -> Vec<String> {
    mismatches(shape, actual, ShapeOptions::default())
}

#[test]
fn rule_objects_match_partially() {
    assert!(partial(json!({ "a": 1 }), json!({ "a": 1, "b": 2 })).is_empty());
    assert_eq!(
        partial(json!({ "a": 1, "c": 3 }), json!({ "a": 1 })),
        ["[$.c]: property is missing. (Expected: 3, Actual: <missing>)"]
    );
}

#[test]
fn rule_arrays_match_exactly_by_length_and_position() {
    assert!(partial(json!([1, 2]), json!([1, 2])).is_empty());
    assert_eq!(
        partial(json!([1, 2]), json!([2, 1, 3])),
        [
            "[$]: array length differs. (Expected: 2 item(s), Actual: 3 item(s))",
            "[$[0]]: values differ. (Expected: 1, Actual: 2)",
            "[$[1]]: values differ. (Expected: 2, Actual: 1)",
        ]
    );
}

#[test]
fn rule_names_are_case_insensitive_by_default() {
    assert!(partial(json!({ "Quantity": 2 }), json!({ "quantity": 2 })).is_empty());
    let sensitive = ShapeOptions {
        case_sensitive: true,
        ..ShapeOptions::default()
    };
    assert_eq!(
        mismatches(json!({ "Quantity": 2 }), json!({ "quantity": 2 }), sensitive),
        ["[$.Quantity]: property is missing. (Expected: 2, Actual: <missing>)"]
    );
    // The exact spelling is preferred when both are there.
    assert!(partial(json!({ "a": 1 }), json!({ "A": 2, "a": 1 })).is_empty());
    // In exact mode a member is listed by its name in any case, or, case-sensitively, as spelt.
    assert!(
        mismatches(
            json!({ "Quantity": 2 }),
            json!({ "quantity": 2 }),
            ShapeOptions::EXACT
        )
        .is_empty()
    );
    let exact_sensitive = ShapeOptions {
        exact: true,
        case_sensitive: true,
    };
    assert!(
        mismatches(
            json!({ "quantity": 2 }),
            json!({ "quantity": 2 }),
            exact_sensitive
        )
        .is_empty()
    );
    assert_eq!(
        mismatches(
            json!({ "quantity": 2 }),
            json!({ "quantity": 2, "Quantity": 3 }),
            exact_sensitive
        ),
        ["[$.Quantity]: unexpected property. (Expected: <not in the shape>, Actual: 3)"]
    );
}

#[test]
fn rule_scalars_match_equal_values_numbers_by_value() {
    assert!(
        partial(
            json!({ "n": 1, "f": 2.5, "s": "x", "b": true, "z": null }),
            json!({ "n": 1.0, "f": 2.5, "s": "x", "b": true, "z": null })
        )
        .is_empty()
    );
    assert_eq!(
        partial(json!({ "s": "1", "n": 1 }), json!({ "s": 1, "n": "1" })),
        [
            "[$.s]: types differ: expected a string, found a number. (Expected: \"1\", Actual: 1)",
            "[$.n]: types differ: expected a number, found a string. (Expected: 1, Actual: \"1\")",
        ]
    );
    assert_eq!(
        partial(json!({ "o": { "x": 1 } }), json!({ "o": [1] })),
        ["[$.o]: types differ: expected an object, found an array. (Expected: {\"x\":1}, Actual: [1])"]
    );
}

#[test]
fn rule_integers_compare_exactly_past_a_floats_precision() {
    // Each pair is one apart and the same f64: only an integer comparison tells them apart.
    let (big, u64_max) = (9_007_199_254_740_993_i64, u64::MAX);
    for (a, b) in [
        (json!(big), json!(big - 1)),
        (json!(-big), json!(-big + 1)),
        (json!(u64_max), json!(u64_max - 1)),
    ] {
        assert_eq!(partial(a.clone(), b.clone()).len(), 1, "{a} against {b}");
        assert!(partial(a.clone(), a.clone()).is_empty(), "{a}");
        assert!(partial(b.clone(), b.clone()).is_empty(), "{b}");
    }
}

#[test]
fn rule_exact_mode_flags_every_unlisted_field_at_every_depth() {
    assert_eq!(
        mismatches(
            json!({ "a": { "b": 1 } }),
            json!({ "a": { "b": 1, "c": 2 }, "d": [] }),
            ShapeOptions::EXACT
        ),
        [
            "[$.a.c]: unexpected property. (Expected: <not in the shape>, Actual: 2)",
            "[$.d]: unexpected property. (Expected: <not in the shape>, Actual: [])",
        ]
    );
}

#[test]
fn rule_every_mismatch_is_reported_at_once_with_its_path() {
    let found = partial(
        json!({ "id": 1, "lines": [ { "sku": "A", "qty": 2 } ], "customer": { "name": "Ada", "tier": "gold" }, "total": 10 }),
        json!({ "id": 2, "lines": [ { "sku": "B", "qty": 2 } ], "customer": { "name": "Ada" }, "total": "10", "weird key": 1 }),
    );
    assert_eq!(found.len(), 4, "{found:#?}");
    assert!(found[1].starts_with("[$.lines[0].sku]: values differ"));
    assert!(found[2].starts_with("[$.customer.tier]: property is missing"));
}

#[test]
fn matched_paths_are_reported_for_coverage() {
    let found = report(
        &json!({ "id": json_value::not_null(), "lines": json_value::each(json!({ "sku": json_value::any_string() })) }),
        &json!({ "id": 1, "lines": [ { "sku": "A", "qty": 1 }, { "sku": "B" } ], "x": 0 }),
        &ShapeOptions::default(),
    );
    assert!(found.is_match());
    assert_eq!(
        found.matched,
        [
            "$.id",
            "$.lines[0].sku",
            "$.lines[0]",
            "$.lines[1].sku",
            "$.lines[1]",
            "$.lines"
        ]
    );
    let odd = report(
        &json!({ "a b": 1 }),
        &json!({ "a b": 1 }),
        &ShapeOptions::default(),
    );
    assert_eq!(odd.matched, ["$[\"a b\"]"]);
}

/// (matcher, values it matches, values it does not).
fn matcher_cases() -> Vec<(&'static str, Matcher, Vec<Value>, Vec<Value>)> {
    use json_value::*;
    vec![
        (
            "not_null",
            not_null(),
            vec![json!(0), json!(""), json!([])],
            vec![json!(null)],
        ),
        (
            "greater_than",
            greater_than(2),
            vec![json!(3), json!(2.5)],
            vec![json!(2), json!(1), json!("3")],
        ),
        (
            "greater_or_equal",
            greater_or_equal(2),
            vec![json!(2), json!(2.0), json!(9)],
            vec![json!(1.99)],
        ),
        (
            "less_than",
            less_than(0),
            vec![json!(-1), json!(-0.5)],
            vec![json!(0), json!(null)],
        ),
        (
            "less_or_equal",
            less_or_equal(1.5),
            vec![json!(1.5), json!(1)],
            vec![json!(2)],
        ),
        (
            "between",
            between(1, 3),
            vec![json!(1), json!(2.2), json!(3)],
            vec![json!(0), json!(3.01)],
        ),
        (
            "any_string",
            any_string(),
            vec![json!(""), json!("x")],
            vec![json!(1), json!(null)],
        ),
        (
            "any_number",
            any_number(),
            vec![json!(0), json!(-2.5)],
            vec![json!("1")],
        ),
        (
            "any_bool",
            any_bool(),
            vec![json!(true), json!(false)],
            vec![json!(0)],
        ),
        (
            "any_array",
            any_array(),
            vec![json!([]), json!([1])],
            vec![json!({})],
        ),
        (
            "any_object",
            any_object(),
            vec![json!({}), json!({ "a": 1 })],
            vec![json!([])],
        ),
        (
            "matches",
            matches("^[A-Z]-\\d+$"),
            vec![json!("A-1"), json!("Z-99")],
            vec![json!("a-1"), json!("A-1x"), json!(1)],
        ),
        (
            "one_of",
            one_of(["placed", "shipped"]),
            vec![json!("placed")],
            vec![json!("lost"), json!(null)],
        ),
        ("one_of numbers", one_of([1, 2]), vec![json!(2.0)], vec![json!(3)]),
        (
            "one_of arrays and objects",
            one_of([json!([1, 2]), json!({ "a": 1 })]),
            vec![json!([1.0, 2]), json!({ "a": 1.0 })],
            vec![
                json!([1]),
                json!([1, 3]),
                json!([1, 2, 3]),
                json!({ "a": 2 }),
                json!({ "b": 1 }),
                json!({ "a": 1, "b": 2 }),
            ],
        ),
        (
            "greater_than past a float's precision",
            greater_than(-9_007_199_254_740_993_i64),
            vec![json!(-9_007_199_254_740_992_i64)],
            vec![json!(-9_007_199_254_740_993_i64)],
        ),
        (
            "less_than past a float's precision",
            less_than(u64::MAX),
            vec![json!(u64::MAX - 1)],
            vec![json!(u64::MAX)],
        ),
        (
            "string_containing",
            string_containing("ord"),
            vec![json!("order"), json!("ord")],
            vec![json!("Order"), json!(1)],
        ),
        (
            "uuid",
            uuid(),
            vec![json!("0193a0b4-6f3c-7cc2-9a4e-0f3f9d8a1b2c")],
            vec![json!("0193a0b4"), json!("not-a-uuid-at-all-here")],
        ),
        (
            "date_time",
            date_time(),
            vec![
                json!("2026-11-22T10:00:00Z"),
                json!("2026-11-22T10:00:00.5+01:00"),
            ],
            vec![json!("2026-11-22"), json!("yesterday")],
        ),
        (
            "len",
            len(2),
            vec![json!("ab"), json!([1, 2]), json!({ "a": 1, "b": 2 }), json!("éé")],
            vec![json!("abc"), json!(12)],
        ),
        (
            "len_between",
            len_between(1, 2),
            vec![json!([1]), json!("ab")],
            vec![json!([]), json!("abc")],
        ),
        (
            "array_containing",
            array_containing([json!(2), json!({ "k": any_string() })]),
            vec![json!([{ "k": "v" }, 1, 2]), json!([2, { "k": "x", "j": 1 }])],
            vec![json!([2]), json!([{ "k": 1 }, 2]), json!("2")],
        ),
        (
            "array_containing distinct",
            array_containing([1, 1]),
            vec![json!([1, 2, 1])],
            vec![json!([1, 2])],
        ),
        (
            "each",
            each(json!({ "sku": any_string() })),
            vec![json!([]), json!([{ "sku": "a" }, { "sku": "b", "n": 1 }])],
            vec![json!([{ "sku": 1 }]), json!({})],
        ),
        (
            "not",
            not(one_of(["cancelled"])),
            vec![json!("placed"), json!(null)],
            vec![json!("cancelled")],
        ),
        (
            "not of a type",
            not(any_string()),
            vec![json!(1)],
            vec![json!("x")],
        ),
    ]
}

#[test]
fn every_matcher_matches_what_it_says_and_nothing_else() {
    for (name, matcher, good, bad) in matcher_cases() {
        let shape = json!({ "v": matcher });
        for value in good {
            let found = partial(shape.clone(), json!({ "v": value }));
            assert!(found.is_empty(), "{name} should match {value}: {found:?}");
        }
        for value in bad {
            let found = partial(shape.clone(), json!({ "v": value }));
            assert_eq!(found.len(), 1, "{name} should not match {value}: {found:?}");
        }
    }
}

#[test]
fn absent_and_not_absent_talk_about_members() {
    use json_value::*;
    assert!(partial(json!({ "discount": absent() }), json!({ "total": 1 })).is_empty());
    assert_eq!(
        partial(json!({ "discount": absent() }), json!({ "discount": 5 })),
        ["[$.discount]: property should be absent. (Expected: absent, Actual: 5)"]
    );
    assert!(partial(json!({ "discount": not(absent()) }), json!({ "discount": null })).is_empty());
    assert_eq!(
        partial(json!({ "discount": not(absent()) }), json!({})),
        ["[$.discount]: property is missing. (Expected: not absent, Actual: <missing>)"]
    );
    assert_eq!(
        partial(json!([absent()]), json!([1])),
        [
            "[$[0]]: absent() only applies to an object member, and this value is there. (Expected: absent, Actual: 1)"
        ]
    );
}

#[test]
fn matcher_mismatches_read_well() {
    use json_value::*;
    assert_eq!(
        partial(json!({ "quantity": greater_than(0) }), json!({ "quantity": -1 })),
        ["[$.quantity]: value does not match. (Expected: greater than 0, Actual: -1)"]
    );
    assert_eq!(
        partial(
            json!({ "quantity": greater_than(0) }),
            json!({ "quantity": "many" })
        ),
        ["[$.quantity]: expected a number, found a string. (Expected: greater than 0, Actual: \"many\")"]
    );
    let invalid = &partial(json!({ "sku": matches("([") }), json!({ "sku": "x" }))[0];
    assert!(
        invalid.starts_with("[$.sku]: the pattern is not a valid regex (error: "),
        "{invalid}"
    );
    assert!(
        invalid.ends_with("). (Expected: a string matching /([/, Actual: \"x\")"),
        "{invalid}"
    );
    assert_eq!(
        partial(
            json!({ "tags": array_containing(["gift", "rush"]) }),
            json!({ "tags": ["gift"] })
        ),
        [
            "[$.tags]: no element matches \"rush\". (Expected: an array containing \"gift\", \"rush\", Actual: [\"gift\"])"
        ]
    );
}

#[test]
fn the_text_match_finds_members_as_the_tree_match_does() {
    let options = [
        ShapeOptions::default(),
        ShapeOptions::EXACT,
        ShapeOptions {
            exact: false,
            case_sensitive: true,
        },
        ShapeOptions {
            exact: true,
            case_sensitive: true,
        },
    ];
    // Repeated names (the last value counts), names in other cases (the exact spelling first),
    // escapes, numbers written differently, and a member the shape wants absent.
    let cases = [
        (json!({ "a": 3 }), r#"{"a":1,"b":2,"a":3}"#),
        (json!({ "a": 1 }), r#"{"a":1,"b":2,"a":3}"#),
        (json!({ "name": "x" }), r#"{"Name":"y","NAME":"x","name":"x"}"#),
        (json!({ "name": "y" }), r#"{"Name":"y","NAME":"x"}"#),
        (json!({ "name": "x" }), r#"{"Name":"y","NAME":"x","Name":"x"}"#),
        (json!({ "straße": 1 }), r#"{"STRASSE":1,"Straße":1}"#),
        (json!({ "q\"uote": "a\nb" }), r#"{"q\"uote":"a\nb"}"#),
        (
            json!({ "n": 1, "m": [1.0, -0.0] }),
            r#"{"n":1.0,"m":[1,0],"k":null}"#,
        ),
        (
            json!({ "gone": json_value::absent(), "here": json_value::not_null() }),
            r#"{"here":0}"#,
        ),
        (json!({ "gone": json_value::absent() }), r#"{"gone":null}"#),
        (json!([{ "a": [] }, null, true]), r#"[{"a":[],"b":{}},null,true]"#),
    ];
    for (shape, text) in cases {
        let value: Value = serde_json::from_str(text).unwrap();
        for options in &options {
            let on_text = PreparedShape::new(shape.clone())
                .matches_slice(text.as_bytes(), options)
                .unwrap();
            assert_eq!(
                on_text,
                match_shape(&shape, &value, options),
                "{shape} on {text}, {options:?}"
            );
            // The text alone must answer a match: one it misses is only hidden by the fallback.
            let text_only = PreparedShape::new(shape.clone())
                .try_matches_slice(text.as_bytes(), options)
                .unwrap();
            assert_eq!(
                text_only.as_ref(),
                on_text.is_match().then_some(&on_text),
                "the text alone, {shape} on {text}, {options:?}"
            );
        }
    }
}

#[test]
fn the_text_match_of_a_large_object_or_a_failing_document_is_the_tree_match() {
    let members: serde_json::Map<String, Value> = (0..200).map(|i| (format!("m{i}"), json!(i))).collect();
    let document = Value::Object(members.clone());
    let shape = Value::Object(members.into_iter().step_by(3).collect());
    let found = report(&shape, &document, &ShapeOptions::default());
    assert!(found.is_match());
    assert_eq!(found.matched.len(), 67);
    // A large object with a repeated name, found through the index as through the scan.
    let mut text: String = (0..40).map(|i| format!("\"m{i}\":{i},")).collect();
    text = format!("{{\"a\":1,{text}\"A\":2,\"a\":3}}");
    let sensitive = ShapeOptions {
        exact: false,
        case_sensitive: true,
    };
    for (shape, options, matches) in [
        (json!({ "a": 3, "m39": 39 }), ShapeOptions::default(), true),
        // Case-sensitive, so only the index finds them: no scan in any case follows.
        (json!({ "a": 3, "m39": 39 }), sensitive, true),
        (json!({ "a": 1 }), ShapeOptions::default(), false),
        (json!({ "M7": 7 }), ShapeOptions::default(), true),
        (json!({ "M7": 7 }), sensitive, false),
    ] {
        let value: Value = serde_json::from_str(&text).unwrap();
        let on_text = PreparedShape::new(shape.clone())
            .matches_slice(text.as_bytes(), &options)
            .unwrap();
        assert_eq!(on_text, match_shape(&shape, &value, &options), "{shape}");
        assert_eq!(on_text.is_match(), matches, "{shape}, {options:?}");
        // Found by the text alone, not by the fallback to a `Value`.
        let text_only = PreparedShape::new(shape.clone())
            .try_matches_slice(text.as_bytes(), &options)
            .unwrap();
        assert_eq!(
            text_only.is_some(),
            matches,
            "the text alone, {shape}, {options:?}"
        );
    }
    let shape = PreparedShape::new(json!({ "a": 1 }));
    for text in ["", "{", "{\"a\":1} {}", "[1,]"] {
        let refused = shape
            .matches_slice(text.as_bytes(), &ShapeOptions::default())
            .unwrap_err();
        let by_serde = serde_json::from_str::<Value>(text).unwrap_err();
        assert_eq!(refused.to_string(), by_serde.to_string(), "{text:?}");
    }
}

#[test]
fn a_prepared_shape_lends_and_shows_its_shape() {
    let prepared = PreparedShape::new(json!({ "id": json_value::uuid() }));
    assert_eq!(prepared.shape(), &json!({ "id": json_value::uuid() }));
    let shown = format!("{prepared:?}");
    assert!(shown.starts_with("PreparedShape { shape: Object {"), "{shown}");
    assert!(shown.contains("\"uuid\""), "{shown}");
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1e12f64..1e12).prop_map(Value::from),
            "[a-z ]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map("[a-zA-Z]{1,5}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// The value with every member name in lower case: a shape that matches only
    /// case-insensitively (or, for repeated names, differently).
    fn lowercased(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.to_lowercase(), lowercased(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(lowercased).collect()),
            other => other.clone(),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn any_value_matches_itself_partially_and_exactly(value in any_json()) {
            prop_assert!(report(&value, &value, &ShapeOptions::default()).is_match());
            prop_assert!(report(&value, &value, &ShapeOptions::EXACT).is_match());
        }

        #[test]
        fn a_field_added_to_the_document_breaks_exact_mode_only(
            fields in proptest::collection::btree_map("[a-z]{1,5}", any_json(), 0..6),
            extra in any_json(),
        ) {
            let shape = Value::Object(fields.clone().into_iter().collect());
            let mut actual = fields;
            actual.insert("added_field_x".into(), extra);
            let actual = Value::Object(actual.into_iter().collect());
            prop_assert!(report(&shape, &actual, &ShapeOptions::default()).is_match());
            let exact = report(&shape, &actual, &ShapeOptions::EXACT);
            prop_assert_eq!(exact.mismatches.len(), 1);
            prop_assert_eq!(&exact.mismatches[0].path, "$.added_field_x");
        }

        #[test]
        fn the_text_match_is_the_tree_match(shape in any_json(), actual in any_json(), exact in any::<bool>()) {
            let options = ShapeOptions { exact, case_sensitive: false };
            report(&shape, &actual, &options);
            report(&lowercased(&actual), &actual, &options);
            report(&lowercased(&actual), &actual, &ShapeOptions { exact, case_sensitive: true });
        }

        #[test]
        fn reordering_an_array_breaks_the_match(
            items in proptest::collection::btree_set(any::<i32>(), 2..8),
            rotation in 1usize..8,
        ) {
            let items: Vec<i32> = items.into_iter().collect();
            let mut reordered = items.clone();
            // A rotation by 1 to len - 1 of distinct items always reorders them; rejecting the
            // rotations that did not made a run of 20 000 cases abort on proptest's reject limit.
            reordered.rotate_left(1 + rotation % (items.len() - 1));
            prop_assert_ne!(&reordered, &items);
            prop_assert!(!report(&json!(items), &json!(reordered), &ShapeOptions::default()).is_match());
        }
    }
}
