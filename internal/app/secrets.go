package app

import (
	"net/url"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ownSecrets are outboxd's own secrets, which the workers scrub from every
// result and error they store: the JWT secret and the previous one
// (whoever holds them can mint tokens for every organization), secrets.key
// or secrets.keys, the Slack signing secret, metrics.token, the console's client secret
// at the identity provider, the database password (database.url,
// PGPASSWORD or the password file) and the token broker's, when its URL
// carries one. Organizations' own secrets (credentials, webhook signing
// secrets) are theirs to give an action, and are redacted where stored.
func ownSecrets(cfg *Config, pool *pgxpool.Pool) []string {
	secrets := []string{cfg.JWTSecret, cfg.Auth.PreviousSecret, cfg.SecretsKey, cfg.Slack.SigningSecret, cfg.Console.ClientSecret, cfg.MetricsToken,
		pool.Config().ConnConfig.Password}
	for _, k := range cfg.SecretsKeys {
		secrets = append(secrets, k.Secret)
	}
	if u, err := url.Parse(cfg.BrokerURL); err == nil && u.User != nil {
		if password, ok := u.User.Password(); ok {
			secrets = append(secrets, password)
		}
	}
	var out []string
	for _, s := range secrets {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
