"""Answers without a usable id (null or absent), for the annotator (pure):
``IdlessAnswers._null_id_error``, which protocol/annotate.py's ``Annotator`` inherits.
"""

from __future__ import annotations

from typing import Any

from mcptap.model import Kind, Message, Severity
from mcptap.protocol.annotator_state import AnnotatorState
from mcptap.protocol.codes import finding
from mcptap.protocol.jsonrpc import Classified, show_id
from mcptap.protocol.lifecycle import SessionState

ERROR = Kind.ERROR


class IdlessAnswers(AnnotatorState):
    """``AnnotatorState`` and the judgement of responses without a usable id."""

    def _null_id_error(self, msg: Message, st: SessionState, value: dict[str, Any],
                       cls: Classified) -> tuple[int | None, int | None, None]:
        """Response without a usable id (null or absent). An error is
        legitimate only as the answer to input the peer could not parse
        (-32700) or read as a request (-32600), or (Streamable HTTP) on an
        error status, answering its POST's request (``jsonrpc.error_id_null``);
        a result never is: it answers a request by its id (``jsonrpc.result_id_null``)."""
        err = value.get("error") if isinstance(value, dict) else None
        code = err.get("code") if isinstance(err, dict) else None
        answered = self.answers.idless_error(msg, value, code) if self.transport == "http" else None
        if answered is not None:
            return answered.seq, msg.t_us - answered.t_us, None
        # the member's own kind and id: a batch's Message is neither an error nor id-less
        without = "id null" if cls.has_id else "no id"
        is_error = cls.kind is ERROR
        if is_error:
            prev = self._last_unparsed.pop((msg.session, msg.direction.peer), None)
            if code in (-32700, -32600):
                msg.findings.append(finding("jsonrpc.error_id_null", f"error {code} with {without}: correct rejection of unreadable input"
                                            + (f" (#{prev.seq})" if prev else ""), severity=Severity.INFO))
                if prev is not None:
                    if prev.members:  # batch rejected as a whole: its requests are answered
                        for p in self.pairing.pending():
                            if p.seq == prev.seq:
                                self.pairing.complete(p)
                    return prev.seq, msg.t_us - prev.t_us, None
                # a request whose id no answer can carry (null, true, an object) is answered by the -32600 with id null
                scope = self._scope_of(msg.direction.peer, st)
                bad = next((p for p in self.pairing.pending() if p.session == scope and p.direction is msg.direction.peer
                            and (p.id is None or isinstance(p.id, (bool, dict, list)))), None)
                if bad is not None and code == -32600:
                    self.pairing.complete(bad)
                    return bad.seq, msg.t_us - bad.t_us, None
                return None, None, None
        scope = self._scope_of(msg.direction.peer, st)
        open_reqs = [p for p in self.pairing.pending() if p.session == scope and p.direction is msg.direction.peer]
        stay = f"; request(s) {', '.join(show_id(p.id) for p in open_reqs[:5])}{' …' if len(open_reqs) > 5 else ''} stay unanswered" if open_reqs else ""
        if is_error:
            msg.findings.append(finding("jsonrpc.error_id_null", f"error{f' {code}' if code is not None else ''} with {without} answers no request"
                                        + stay, {"open": [p.seq for p in open_reqs[:20]]}))
        else:
            what = "result" if "result" in value else "response"
            msg.findings.append(finding("jsonrpc.result_id_null", f"{what} with {without} answers no request: a result carries the id of "
                                        "the request it answers (only an error for unreadable input may have id null)" + stay,
                                        {"open": [p.seq for p in open_reqs[:20]]}))
        return None, None, None
