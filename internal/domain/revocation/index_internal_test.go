package revocation

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
)

// TestIndex_Revoked: each selector refuses its organization's matching
// tokens issued before its cut-off and those without iat; tokens issued
// after it, of other sessions, automations or people, or of another
// organization are not refused. A subject's revocation refuses the
// tokens acting for that person (user_id) as their own.
func TestIndex_Revoked(t *testing.T) {
	t.Parallel()
	cut := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	idx := newIndex([]Revocation{
		{Org: "acme", JTI: "j1", IssuedBefore: cut},
		{Org: "acme", SessionID: "s1", IssuedBefore: cut},
		{Org: "acme", AutomationID: "a1", IssuedBefore: cut},
		{Org: "acme", Subject: "alice", IssuedBefore: cut},
		{Org: "globex", IssuedBefore: cut},
	})
	before, after := jwt.NewNumericDate(cut.Add(-time.Second)), jwt.NewNumericDate(cut)
	token := func(org string, iat *jwt.NumericDate, edit func(*auth.Claims)) *auth.Claims {
		c := &auth.Claims{Org: org, Kind: auth.KindSandbox, SessionID: "s2", RegisteredClaims: jwt.RegisteredClaims{IssuedAt: iat, ID: "j2"}}
		if edit != nil {
			edit(c)
		}
		return c
	}
	jti := func(c *auth.Claims) { c.ID = "j1" }
	session := func(c *auth.Claims) { c.SessionID = "s1" }
	automation := func(c *auth.Claims) { c.Kind, c.SessionID, c.AutomationID = auth.KindService, "", "a1" }
	person := func(sub string) func(*auth.Claims) {
		return func(c *auth.Claims) { c.Kind, c.Role, c.SessionID, c.Subject = auth.KindUser, auth.RoleMember, "", sub }
	}
	// An agent acting for a person: a sandbox token, or a service token of
	// an automation, carrying their user_id and a subject of its own.
	agentOf := func(user string) func(*auth.Claims) {
		return func(c *auth.Claims) { c.Subject, c.UserID = "sandbox-s2", user }
	}
	automationOf := func(user string) func(*auth.Claims) {
		return func(c *auth.Claims) {
			c.Kind, c.SessionID, c.AutomationID, c.Subject, c.UserID = auth.KindService, "", "a2", "nightly", user
		}
	}
	for name, tc := range map[string]struct {
		claims  *auth.Claims
		revoked bool
	}{
		"JTIBefore":              {token("acme", before, jti), true},
		"JTIAfter":               {token("acme", after, jti), false},
		"JTIWithoutIat":          {token("acme", nil, jti), true},
		"SessionBefore":          {token("acme", before, session), true},
		"SessionAfter":           {token("acme", after, session), false},
		"AutomationBefore":       {token("acme", before, automation), true},
		"AutomationNoIat":        {token("acme", nil, automation), true},
		"SubjectBefore":          {token("acme", before, person("alice")), true},
		"SubjectAfter":           {token("acme", after, person("alice")), false},
		"SubjectNoIat":           {token("acme", nil, person("alice")), true},
		"OtherSubject":           {token("acme", before, person("bob")), false},
		"SubjectOtherOrg":        {token("initech", before, person("alice")), false},
		"AgentOfSubject":         {token("acme", before, agentOf("alice")), true},
		"AgentOfSubjectAfter":    {token("acme", after, agentOf("alice")), false},
		"AgentOfSubjectNoIat":    {token("acme", nil, agentOf("alice")), true},
		"AutomationOfSubject":    {token("acme", before, automationOf("alice")), true},
		"AgentOfOther":           {token("acme", before, agentOf("bob")), false},
		"AgentOfSubjectOtherOrg": {token("initech", before, agentOf("alice")), false},
		"OtherSession":           {token("acme", before, nil), false},
		"OtherSessionNoIat":      {token("acme", nil, nil), false},
		"OrgWideBefore":          {token("globex", before, nil), true},
		"OrgWideAfter":           {token("globex", after, nil), false},
		"OrgWideNoIat":           {token("globex", nil, nil), true},
		"OtherOrg":               {token("initech", before, jti), false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.revoked, idx.revoked(tc.claims))
		})
	}
}
