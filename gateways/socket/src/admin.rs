//! The socket's answers to admin requests: a client sends an
//! [`AdminRequest`](passepartout_admin::AdminRequest) as it is, and the
//! core's [`AdminReply`] becomes here the frame protocol version 1 answers
//! with.
//!
//! The wire form is the one these frames always had: a listing the core could
//! not read is `{"error": "…"}` in place of the document, a decision (or a
//! batch of them) travels in an `approvals` frame, a revoked rule in a
//! `rules` frame.

use passepartout_admin::{AdminReply, Decision, Decisions, RuleRevoked, Unreadable};
use serde_json::json;

use crate::protocol::ServerFrame;

/// The frame that carries the core's answer to the client.
pub(crate) fn frame(reply: AdminReply) -> ServerFrame {
    match reply {
        AdminReply::Status(status) => ServerFrame::Status { status },
        AdminReply::Approvals(listing) => ServerFrame::Approvals {
            approvals: readable(listing),
        },
        AdminReply::Decision(Decision { decided, message }) => ServerFrame::Approvals {
            approvals: json!({ "decided": decided, "message": message }),
        },
        AdminReply::Decisions(Decisions { ok, message, decisions }) => ServerFrame::Approvals {
            approvals: json!({ "ok": ok, "message": message, "decisions": decisions }),
        },
        AdminReply::Rules(rules) => ServerFrame::Rules { rules: readable(rules) },
        AdminReply::RuleRevoked(RuleRevoked { revoked, message }) => ServerFrame::Rules {
            rules: json!({ "revoked": revoked, "message": message }),
        },
        AdminReply::Loops(loops) => ServerFrame::Loops { loops: readable(loops) },
        AdminReply::LoopControl(answer) => ServerFrame::LoopControl(answer),
        AdminReply::Tools(tools) => ServerFrame::Tools { tools },
        AdminReply::Access(answer) => ServerFrame::Access(answer),
        AdminReply::Web(answer) => ServerFrame::Web(answer),
        AdminReply::Reloaded(answer) => ServerFrame::Reloaded(answer),
        // Only the web dashboard asks for these; no frame of the socket does.
        AdminReply::Dashboard(_) => ServerFrame::Error {
            code: crate::protocol::ErrorCode::UnknownType,
            message: "the dashboard's documents are not served over the socket".into(),
            id: None,
        },
    }
}

fn readable(listing: Result<serde_json::Value, Unreadable>) -> serde_json::Value {
    listing.unwrap_or_else(|unreadable| json!({ "error": unreadable.message }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(reply: AdminReply) -> serde_json::Value {
        serde_json::to_value(frame(reply)).unwrap()
    }

    #[test]
    fn replies_keep_the_wire_form_of_protocol_version_1() {
        assert_eq!(
            wire(AdminReply::Status(json!({"version": "1"}))),
            json!({"type": "status", "status": {"version": "1"}})
        );
        assert_eq!(
            wire(AdminReply::Approvals(Ok(json!({"approvals": []})))),
            json!({"type": "approvals", "approvals": {"approvals": []}})
        );
        assert_eq!(
            wire(AdminReply::Approvals(Err(Unreadable::because("disk gone")))),
            json!({"type": "approvals", "approvals": {"error": "disk gone"}})
        );
        let decided = Decision {
            decided: true,
            message: "approved".into(),
        };
        assert_eq!(
            wire(AdminReply::Decision(decided)),
            json!({"type": "approvals", "approvals": {"decided": true, "message": "approved"}})
        );
        let batch = Decisions {
            ok: true,
            message: "approved 1".into(),
            decisions: vec![Decision {
                decided: true,
                message: "approved".into(),
            }],
        };
        assert_eq!(
            wire(AdminReply::Decisions(batch)),
            json!({"type": "approvals", "approvals": {"ok": true, "message": "approved 1", "decisions": [{"decided": true, "message": "approved"}]}})
        );
        assert_eq!(
            wire(AdminReply::Rules(Ok(json!({"rules": []})))),
            json!({"type": "rules", "rules": {"rules": []}})
        );
        let revoked = RuleRevoked {
            revoked: false,
            message: "no rule 3".into(),
        };
        assert_eq!(
            wire(AdminReply::RuleRevoked(revoked)),
            json!({"type": "rules", "rules": {"revoked": false, "message": "no rule 3"}})
        );
        assert_eq!(
            wire(AdminReply::Loops(Ok(json!([])))),
            json!({"type": "loops", "loops": []})
        );
        let refused = passepartout_admin::LoopControl {
            ok: false,
            message: "there is no loop \"x\"".into(),
        };
        assert_eq!(
            wire(AdminReply::LoopControl(refused)),
            json!({"type": "loop_control", "ok": false, "message": "there is no loop \"x\""})
        );
    }
}
