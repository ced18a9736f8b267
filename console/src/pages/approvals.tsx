// ApprovalProgress: who approved a pending invocation so far and how many
// distinct approvals it needs ("Approved by carol, 1 of 2"), and which
// approver group decides it. The API sends these on pending invocations
// (approvals, approvals_required, approver_group, can_approve).
import type { Invocation } from "../api";

/** mayDecide: the caller's role allows deciding, and the invocation's
 * approver group includes them (unknown: yes, the API checks again). */
export function mayDecide(inv: Invocation, canDecide: boolean): boolean {
  return canDecide && inv.can_approve !== false;
}

export function ApprovalProgress({ inv, canDecide }: { inv: Invocation; canDecide: boolean }) {
  const required = inv.approvals_required ?? 1;
  const approvals = inv.approvals ?? [];
  const group = inv.approver_group;
  if (required <= 1 && approvals.length === 0 && !group) return null;
  const by = approvals.map((a) => a.by).join(", ");
  return (
    <p class="approvals" aria-label="Approvals">
      {approvals.length > 0 ? `Approved by ${by}, ${approvals.length} of ${required}` : `Needs ${required} approval${required === 1 ? "" : "s"}`}
      {group ? <span class="muted"> · approver group {group}</span> : null}
      {canDecide && inv.can_approve === false ? <span class="muted"> · for the group's members to decide</span> : null}
    </p>
  );
}
