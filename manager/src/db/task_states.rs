//! Task states as stored in `tasks.state`: a fixed code for each state, written out here,
//! so that no reordering or addition of [`TaskState`]s can change what a stored code means.
//! A new state takes a new code; a code is never reused.

use hetpilot_protocol::protocol::TaskState;

/// The stored code of `state`.
pub fn state_code(state: TaskState) -> i64 {
    match state {
        TaskState::Waiting => 0,
        TaskState::Leased => 1,
        TaskState::Running => 2,
        TaskState::Done => 3,
        TaskState::Failed => 4,
        TaskState::Cancelled => 5,
    }
}

/// The state stored as `code`, if any state has that code.
pub fn state_from_code(code: i64) -> Option<TaskState> {
    TaskState::ALL.into_iter().find(|s| state_code(*s) == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes every data directory holds, by name: the meaning of a stored row, which
    /// no change to the enum may alter.
    const STORED: [(&str, i64); 6] = [
        ("waiting", 0),
        ("leased", 1),
        ("running", 2),
        ("done", 3),
        ("failed", 4),
        ("cancelled", 5),
    ];

    #[test]
    fn each_state_keeps_the_code_data_directories_hold() {
        for (name, code) in STORED {
            let state = TaskState::parse(name).expect("a state of that name");
            assert_eq!(state_code(state), code, "{name}");
            assert_eq!(state_from_code(code), Some(state), "{code}");
        }
        assert_eq!(
            TaskState::ALL.len(),
            STORED.len(),
            "a new state needs a new code"
        );
    }

    #[test]
    fn no_two_states_share_a_code_and_unknown_codes_read_as_none() {
        let mut codes: Vec<i64> = TaskState::ALL.into_iter().map(state_code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), TaskState::ALL.len());
        for unknown in [-1, 6, i64::MAX, i64::MIN] {
            assert_eq!(state_from_code(unknown), None, "{unknown}");
        }
    }
}
