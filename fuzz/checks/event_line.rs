//! The archive's event lines read by hand (`line_reader`, the reader's hot path) against serde
//! on arbitrary text: each line reads the same either way, a text of lines reads as its lines
//! one by one, and an event read writes back to a line that reads as the same event.

use kit_core::event::{Event, RunId, TestId};

/// Panics when the input breaks what this target checks.
pub(crate) fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let run = RunId::new("run").unwrap();
    let test: TestId = "01a2236f-d37b-7046-86da-6c5101c864e8".parse().unwrap();
    let mut whole = Event::lines_in_scope(text, &run, test);
    for line in text.split('\n').filter(|l| !l.is_empty()) {
        let by_hand = Event::from_json_in_scope(line, &run, test);
        // A leading space is JSON's whitespace, which only serde reads.
        let by_serde = Event::from_json_in_scope(&format!(" {line}"), &run, test);
        match (&by_hand, &by_serde) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(_), Err(_)) => {}
            _ => panic!("by hand {:?}, by serde {:?}", by_hand.is_ok(), by_serde.is_ok()),
        }
        let from_whole = whole.next().expect("the text has this line");
        assert_eq!(from_whole.as_ref().ok(), by_hand.as_ref().ok());
        assert_eq!(from_whole.is_ok(), by_hand.is_ok());
        if let Ok(event) = by_hand {
            let mut written = Vec::new();
            event.write_json_in_scope(&mut written);
            let written = std::str::from_utf8(&written).expect("lines are UTF-8");
            assert_eq!(
                Event::from_json_in_scope(written, &run, test).ok(),
                Some(event.clone())
            );
            let mut full = Vec::new();
            event.write_json(&mut full);
            assert_eq!(full, serde_json::to_vec(&event).unwrap());
        }
    }
    assert!(whole.next().is_none(), "the text read as more lines than it has");
}
