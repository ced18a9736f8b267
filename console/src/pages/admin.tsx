// The administration pages' entries in the navigation and the router, so
// the shell (main.tsx) names them in one line each.
import type { Session } from "../main";
import { ModesPage } from "./modes";
import { CredentialsPage } from "./credentials";
import { WebhookPage, Webhooks } from "./webhooks";
import { Databases } from "./databases";
import { SlackPage } from "./slack";
import { GrantsPage } from "./grants";

/** adminNav lists the administration pages: [route, label, shown]. */
export function adminNav(session: Session): [string, string, boolean][] {
  const admin = session.canDecide;
  return [
    ["modes", "Modes", true],
    ["credentials", "Credentials", admin],
    ["webhooks", "Webhooks", admin],
    ["databases", "Databases", admin],
    ["slack", "Slack", admin],
    ["grants", "Grants", admin],
  ];
}

/** adminPage renders an administration page, or null when route is not one. */
export function adminPage(page: string, id: string | undefined, session: Session) {
  switch (page) {
    case "modes":
      return <ModesPage session={session} automation={id} />;
    case "credentials":
      return <CredentialsPage />;
    case "webhooks":
      return id ? <WebhookPage id={id} /> : <Webhooks />;
    case "databases":
      return <Databases />;
    case "slack":
      return <SlackPage session={session} />;
    case "grants":
      return <GrantsPage />;
  }
  return null;
}
