// Databases: the Postgres databases agents may read. The URL is a secret:
// entered, never shown back (only its host and database are).
import { useEffect, useState } from "preact/hooks";
import { admin, type Database, type DatabaseInput, type DatabaseTest } from "../admin";
import { Alert, Card, DataTable, Empty, ErrorAlert, Flash, Loading, Title, fmtTime } from "../ui";
import { ConfirmButton, SecretField, TextField, apiFailure, useForm, type FieldErrors } from "../forms";

/** parseDuration reads a Go duration ("500ms", "10s", "1m30s") in milliseconds, NaN when it is not one. */
function parseDuration(s: string): number {
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60000, h: 3600000 };
  let total = 0;
  let m: RegExpExecArray | null;
  let end = 0;
  while ((m = re.exec(s)) !== null) {
    total += parseFloat(m[1]) * unit[m[2]];
    end = re.lastIndex;
  }
  return s && end === s.length ? total : NaN;
}

function checkDatabase(name: string, url: string, timeout: string, maxRows: string, create: boolean): FieldErrors {
  const errs: FieldErrors = {};
  const n = name.trim();
  if (!n || n.length > 100) errs.name = "name is required (at most 100 characters)";
  const u = url.trim();
  if (create && !u) errs.url = "url is required: postgres://user:password@host:5432/database";
  else if (u && !/^postgres(ql)?:\/\//.test(u)) errs.url = "url must be postgres://user:password@host:5432/database";
  else if (u.length > 2048) errs.url = "url is longer than 2048 bytes";
  if (timeout.trim()) {
    const ms = parseDuration(timeout.trim());
    if (isNaN(ms) || ms < 100 || ms > 300000) errs.statement_timeout = 'statement_timeout must be a duration from 100ms to 5m0s, such as "10s"';
  }
  if (maxRows.trim()) {
    const r = Number(maxRows);
    if (!Number.isInteger(r) || r < 1 || r > 10000) errs.max_rows = "max_rows must be from 1 to 10000";
  }
  return errs;
}

function DatabaseForm({ db, done }: { db?: Database; done: (d: Database) => void }) {
  const p = db ? "db-edit-" + db.id.slice(0, 8) : "db-new";
  const [name, setName] = useState(db?.name ?? "");
  const [url, setURL] = useState("");
  const [timeout, setTimeout_] = useState(db?.statement_timeout ?? "");
  const [maxRows, setMaxRows] = useState(db ? String(db.max_rows) : "");
  const form = useForm();
  const submit = async (e: Event) => {
    e.preventDefault();
    if (form.clientErrors(checkDatabase(name, url, timeout, maxRows, !db))) return;
    const body: DatabaseInput = { name: name.trim() };
    if (url.trim()) body.url = url.trim();
    if (timeout.trim()) body.statement_timeout = timeout.trim();
    if (maxRows.trim()) body.max_rows = Number(maxRows);
    await form.submit(async () => {
      const r = db ? await admin.updateDatabase(db.id, body) : await admin.createDatabase(body);
      setURL("");
      if (!db) {
        setName("");
        setTimeout_("");
        setMaxRows("");
      }
      done(r.database);
    });
  };
  return (
    <form class="admin-form" onSubmit={submit} noValidate>
      <ErrorAlert error={form.error} />
      <TextField id={p + "-name"} label="Name" value={name} onValue={setName} error={form.fields.name} required />
      <SecretField
        id={p + "-url"}
        label="URL"
        value={url}
        onValue={setURL}
        error={form.fields.url}
        required={!db}
        stored={!!db}
        placeholder="postgres://reader:password@db.example.com:5432/shop"
        help={db ? "Leave empty to keep the stored one." : "Only sslmode, connect_timeout and application_name parameters. Use a role with read grants only."}
      />
      <div class="row">
        <TextField id={p + "-timeout"} label="Statement timeout" value={timeout} onValue={setTimeout_} error={form.fields.statement_timeout} placeholder="10s" help="100ms to 5m." />
        <TextField id={p + "-maxrows"} label="Max rows" value={maxRows} onValue={setMaxRows} error={form.fields.max_rows} placeholder="100" type="number" help="1 to 10000." />
      </div>
      <div class="buttons">
        <button class="primary" type="submit" disabled={form.busy}>
          {db ? "Save database" : "Register database"}
        </button>
      </div>
    </form>
  );
}

export function Databases() {
  const [list, setList] = useState<Database[] | null>(null);
  const [error, setError] = useState("");
  const [flash, setFlash] = useState("");
  const [editing, setEditing] = useState("");
  const [tests, setTests] = useState<Record<string, DatabaseTest | string>>({});
  const load = () =>
    admin
      .databases()
      .then((r) => setList(r.databases))
      .catch((e) => setError(apiFailure(e).message));
  useEffect(() => {
    load();
  }, []);
  if (!list && error) return <ErrorAlert error={error} />;
  if (!list) return <Loading />;
  return (
    <section aria-labelledby="db-h">
      <Title id="db-h">Databases</Title>
      <p class="muted">
        Each database is the source <code>database:&lt;id&gt;</code> with the actions <code>query</code> (R1), <code>list_tables</code> and{" "}
        <code>describe_table</code> (R0), run in a read-only transaction. <strong>Test</strong> runs <code>list_tables</code> now, as an agent would.
      </p>
      <Flash message={flash} />
      <ErrorAlert error={error} />
      {list.length === 0 ? (
        <Empty>No databases registered.</Empty>
      ) : (
        <DataTable caption={list.length + " registered"} columns={["Name", "Source", "Host", "Database", "Timeout", "Max rows", "Updated"]} actions>
          {list.map((d) => [
            <tr key={d.id} data-database={d.name}>
              <th scope="row">{d.name}</th>
              <td>
                <code>{d.source_id}</code>
              </td>
              <td>{d.host}</td>
              <td>{d.database}</td>
              <td>{d.statement_timeout}</td>
              <td>{d.max_rows}</td>
              <td>{fmtTime(d.updated_at)}</td>
              <td class="buttons">
                <button
                  onClick={async () => {
                    setTests((t) => ({ ...t, [d.id]: "Testing…" }));
                    try {
                      const r = await admin.testDatabase(d.id);
                      setTests((t) => ({ ...t, [d.id]: r }));
                    } catch (e) {
                      setTests((t) => ({ ...t, [d.id]: apiFailure(e).message }));
                    }
                  }}
                  aria-label={"Test " + d.name}
                >
                  Test
                </button>
                <button onClick={() => setEditing(editing === d.id ? "" : d.id)} aria-expanded={editing === d.id} aria-label={"Edit " + d.name}>
                  Edit
                </button>
                <ConfirmButton
                  label={"Delete " + d.name}
                  what="Agents lose this source."
                  onConfirm={async () => {
                    setError("");
                    try {
                      await admin.deleteDatabase(d.id);
                      setFlash("Deleted " + d.name + ".");
                      load();
                    } catch (e) {
                      setError(apiFailure(e).message);
                    }
                  }}
                >
                  Delete
                </ConfirmButton>
              </td>
            </tr>,
            tests[d.id] ? (
              <tr key={d.id + "-test"} data-database-test={d.name}>
                <td colSpan={8} aria-live="polite">
                  <TestOutcome t={tests[d.id]} />
                </td>
              </tr>
            ) : null,
            editing === d.id ? (
              <tr key={d.id + "-edit"}>
                <td colSpan={8}>
                  <DatabaseForm
                    db={d}
                    done={(x) => {
                      setEditing("");
                      setFlash("Saved " + x.name + ".");
                      load();
                    }}
                  />
                </td>
              </tr>
            ) : null,
          ])}
        </DataTable>
      )}
      <Card id="db-new-h" title="Register a database">
        <DatabaseForm
          done={(d) => {
            setFlash("Registered " + d.name + " as " + d.source_id + ".");
            load();
          }}
        />
      </Card>
    </section>
  );
}

function TestOutcome({ t }: { t: DatabaseTest | string }) {
  if (typeof t === "string") return <p>{t}</p>;
  return t.reachable ? (
    <Alert kind="ok">Reachable: its user may read {t.table_count} tables and views.</Alert>
  ) : (
    <Alert kind="error">
      Not usable: {t.error} {t.code ? <code>({t.code})</code> : null}
    </Alert>
  );
}
