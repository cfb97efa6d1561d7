//! The route table (a trie walked with backtracking, and a hash map that skips the walk for a
//! template that is a key) on arbitrary path keys: a concrete path made from a key finds a key
//! that matches it, a key's own template finds a key of its shape, and no lookup panics.

use kit_coverage::RouteTable;

use super::plain_path::{self, Segment, shape};

fn matches(key: &[Segment<'_>], path: &str) -> bool {
    let segments: Vec<&str> = path[1..].split('/').collect();
    key.len() == segments.len()
        && key.iter().zip(&segments).all(|(k, s)| match k {
            Segment::Literal(text) => text == s,
            Segment::Template => !s.is_empty(),
        })
}

/// Panics when the input breaks what this target checks.
pub(crate) fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines: Vec<&str> = text.lines().take(64).collect();
    let keys: Vec<(&str, Vec<Segment<'_>>)> = lines
        .iter()
        .filter_map(|l| plain_path::segments(l).map(|s| (*l, s)))
        .take(32)
        .collect();
    let values: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.is_empty() && !l.contains(['/', '%', '?', '#', '{', '}']))
        .collect();
    let mut table = RouteTable::new();
    for (key, _) in &keys {
        table.insert(key);
    }
    let parsed: Vec<Vec<Segment<'_>>> = (0..table.len())
        .map(|i| plain_path::segments(table.key(i)).unwrap())
        .collect();
    for (n, (key, segments)) in keys.iter().enumerate() {
        let mut value = values.iter().cycle().skip(n);
        let concrete: String = segments
            .iter()
            .map(|s| match s {
                Segment::Literal(text) => format!("/{text}"),
                Segment::Template => format!("/{}", value.next().copied().unwrap_or("v")),
            })
            .collect();
        let found = table.find_path(&concrete, None);
        let found = found.unwrap_or_else(|| panic!("{concrete} found nothing, though {key} matches it"));
        assert!(
            matches(&parsed[found], &concrete),
            "{concrete} found {}",
            table.key(found)
        );

        let template: String = segments
            .iter()
            .map(|s| match s {
                Segment::Literal(text) => format!("/{text}"),
                Segment::Template => "/{p}".to_owned(),
            })
            .collect();
        let found = table.find_template(&template, None);
        let found = found.unwrap_or_else(|| panic!("{template} found nothing, though {key} has its shape"));
        assert_eq!(
            shape(&parsed[found]),
            shape(segments),
            "{template} found {}",
            table.key(found)
        );
    }
    for line in &lines {
        for found in [table.find_path(line, None), table.find_template(line, Some(line))] {
            assert!(found.is_none_or(|f| f < table.len()));
        }
    }
}
