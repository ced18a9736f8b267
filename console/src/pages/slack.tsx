// Slack approvals: the organization's channel (admin/owner) and the Slack
// users who may decide from Slack (owner only, as the API says). Both are
// saved with If-Match the ETag read with the page (one covers both): a
// change someone made meanwhile is a 412, and the page reloads theirs.
import { useEffect, useState } from "preact/hooks";
import { admin, type SlackApprover, type SlackSettings } from "../admin";
import type { Session } from "../main";
import { Card, DataTable, ErrorAlert, Flash, Loading, Title, isStale, staleText } from "../ui";
import { ChoiceField, ConfirmButton, FieldError, TextField, apiFailure, useForm } from "../forms";

type Row = { slack: string; user_id: string; role: string };

export function SlackPage({ session }: { session: Session }) {
  const [settings, setSettings] = useState<SlackSettings | null>(null);
  const [etag, setEtag] = useState<string | null>(null);
  const [error, setError] = useState("");
  const [flash, setFlash] = useState("");
  const [channel, setChannel] = useState("");
  const [rows, setRows] = useState<Row[]>([]);
  const channelForm = useForm();
  const approversForm = useForm();
  const show = (s: SlackSettings) => {
    setSettings(s);
    setChannel(s.channel ?? "");
    setRows(Object.entries(s.approvers ?? {}).map(([slack, a]) => ({ slack, user_id: a.user_id, role: a.role })));
  };
  useEffect(() => {
    admin
      .slack(setEtag)
      .then(show)
      .catch((e) => setError(apiFailure(e).message));
  }, []);
  /** save runs a PUT; on a 412 it reads the settings again and says why. */
  const save = async (put: () => Promise<SlackSettings>) => {
    try {
      show(await put());
    } catch (e) {
      if (!isStale(e)) throw e;
      await admin.slack(setEtag).then(show).catch(() => {});
      throw new Error(staleText("the Slack settings"));
    }
  };
  const saveChannel = async (value: string | null) => {
    setFlash("");
    if (await channelForm.submit(() => save(() => admin.putSlackChannel(value, etag, setEtag)))) setFlash(value ? "Channel set to " + value + "." : "Channel reset to the configured one.");
  };
  const saveApprovers = async (e: Event) => {
    e.preventDefault();
    setFlash("");
    const errs: Record<string, string> = {};
    const seen = new Set<string>();
    rows.forEach((r, i) => {
      if (!r.slack.trim() || r.slack.trim().length > 255) errs["approvers/" + i] = "a Slack user id must be 1 to 255 bytes";
      else if (seen.has(r.slack.trim())) errs["approvers/" + i] = "listed twice";
      else if (!r.user_id.trim() || r.user_id.trim().length > 255) errs[r.slack.trim() + ".user_id"] = "user_id must be 1 to 255 bytes";
      seen.add(r.slack.trim());
    });
    if (approversForm.clientErrors(errs)) return;
    const body: Record<string, SlackApprover> = {};
    for (const r of rows) body[r.slack.trim()] = { user_id: r.user_id.trim(), role: r.role };
    if (await approversForm.submit(() => save(() => admin.putSlackApprovers(body, etag, setEtag)))) setFlash("Saved " + rows.length + " approver(s).");
  };
  if (!settings && error) return <ErrorAlert error={error} />;
  if (!settings) return <Loading />;
  const owner = session.isOwner;
  const set = (i: number, r: Partial<Row>) => setRows(rows.map((x, j) => (j === i ? { ...x, ...r } : x)));
  return (
    <section aria-labelledby="slack-h">
      <Title id="slack-h">Slack approvals</Title>
      <p class="muted">
        Pending invocations are posted to the channel with Approve and Deny buttons, with the organization's Slack credential. Only mapped Slack users decide
        from Slack, as the outboxd user and role they map to.
      </p>
      <Flash message={flash} />
      <Card id="slack-ch-h" title="Channel">
        <form
          class="admin-form"
          noValidate
          onSubmit={(e) => {
            e.preventDefault();
            if (!channel.trim() || channel.trim().length > 255) {
              channelForm.clientErrors({ channel: "channel must be a Slack channel id or name of 1 to 255 bytes (or reset it to the configured one)" });
              return;
            }
            saveChannel(channel.trim());
          }}
        >
          <ErrorAlert error={channelForm.error} />
          <TextField id="slack-channel" label="Channel id" value={channel} onValue={setChannel} error={channelForm.fields.channel} placeholder="C0123456789" help={settings.channel ? "" : "None set: notifications.slack.channel applies."} />
          <div class="buttons">
            <button class="primary" type="submit" disabled={channelForm.busy}>
              Save channel
            </button>
            {settings.channel ? <ConfirmButton label="Reset channel" what="The configured channel applies again." onConfirm={() => saveChannel(null)} /> : null}
          </div>
        </form>
      </Card>
      <Card id="slack-ap-h" title="Approvers">
        {owner ? null : <p class="alert alert-info">Only an owner can change the approvers.</p>}
        <form class="admin-form" noValidate onSubmit={saveApprovers}>
          <ErrorAlert error={approversForm.error} />
          <FieldError id="slack-approvers" message={approversForm.fields.approvers} />
          <DataTable columns={["Slack user id", "outboxd user id", "Role"]} actions={owner}>
            {rows.map((r, i) => (
              <tr key={i} data-approver={i}>
                <td>
                  {owner ? (
                    <TextField id={"ap-slack-" + i} label={"Slack user id " + (i + 1)} value={r.slack} onValue={(v) => set(i, { slack: v })} error={approversForm.fields["approvers/" + i]} placeholder="U0123" />
                  ) : (
                    r.slack
                  )}
                </td>
                <td>{owner ? <TextField id={"ap-user-" + i} label={"outboxd user " + (i + 1)} value={r.user_id} onValue={(v) => set(i, { user_id: v })} error={approversForm.fields[r.slack.trim() + ".user_id"]} /> : r.user_id}</td>
                <td>{owner ? <ChoiceField id={"ap-role-" + i} label={"Role " + (i + 1)} value={r.role} options={["admin", "owner"]} onValue={(v) => set(i, { role: v })} error={approversForm.fields[r.slack.trim() + ".role"]} /> : r.role}</td>
                {owner ? (
                  <td>
                    <button type="button" class="danger-outline" onClick={() => setRows(rows.filter((_, j) => j !== i))} aria-label={"Remove approver " + (r.slack || i + 1)}>
                      Remove
                    </button>
                  </td>
                ) : null}
              </tr>
            ))}
          </DataTable>
          {owner ? (
            <div class="buttons">
              <button type="button" onClick={() => setRows([...rows, { slack: "", user_id: "", role: "admin" }])}>
                Add approver
              </button>
              <button class="primary" type="submit" disabled={approversForm.busy}>
                Save approvers
              </button>
            </div>
          ) : null}
        </form>
      </Card>
    </section>
  );
}
