// Package slackapprovalstore stores the organizations' Slack approval
// settings (their channel and approvers) and the approval messages posted.
// Its methods work through the pool it is given, but for the relay
// consumer's, which run in the relay's transaction.
package slackapprovalstore

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Store reads and writes Slack approval settings and messages.
type Store struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, q: dbsqlc.New()}
}

// Settings are an organization's stored settings.
type Settings struct {
	// Channel is nil when the organization has none.
	Channel *string
	// Approvers is the JSON of the approvers, by Slack user id.
	Approvers json.RawMessage
}

// Settings returns org's settings, and false when it stored none.
func (s *Store) Settings(ctx context.Context, org string) (Settings, bool, error) {
	return s.SettingsIn(ctx, s.pool, org)
}

// SettingsIn is Settings on db (a transaction of Locked).
func (s *Store) SettingsIn(ctx context.Context, db dbutil.DB, org string) (Settings, bool, error) {
	r, err := s.q.SlackSettingsGet(ctx, db, org)
	if errors.Is(err, pgx.ErrNoRows) {
		return Settings{}, false, nil
	}
	return Settings{Channel: r.Channel, Approvers: r.Approvers}, err == nil, err
}

// Locked runs fn in a transaction that holds the lock of org's Slack
// settings until it ends, so that their changes, and the reads they
// compare with, take turns.
func (s *Store) Locked(ctx context.Context, org string, fn func(ctx context.Context, tx pgx.Tx) error) error {
	return dbutil.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		if err := s.Lock(ctx, tx, org); err != nil {
			return err
		}
		return fn(ctx, tx)
	})
}

// Lock takes the lock of org's Slack settings in tx (another's, such as a
// revocation's), until it ends.
func (s *Store) Lock(ctx context.Context, tx pgx.Tx, org string) error {
	return s.q.SettingsLock(ctx, tx, "outboxd.settings:"+org+":slack")
}

// PutChannel sets (or, with nil, clears) org's channel in tx.
func (s *Store) PutChannel(ctx context.Context, tx pgx.Tx, org, by string, channel *string) error {
	_, err := s.q.SlackChannelPut(ctx, tx, dbsqlc.SlackChannelPutParams{OrganizationID: org, Channel: channel, UpdatedBy: by})
	return err
}

// PutApprovers replaces org's approvers with the JSON approvers in tx.
func (s *Store) PutApprovers(ctx context.Context, tx pgx.Tx, org, by string, approvers json.RawMessage) error {
	_, err := s.q.SlackApproversPut(ctx, tx, dbsqlc.SlackApproversPutParams{OrganizationID: org, Approvers: approvers, UpdatedBy: by})
	return err
}

// ChannelOrganizations returns the organizations with a channel of their
// own, read in the relay's tx.
func (s *Store) ChannelOrganizations(ctx context.Context, tx pgx.Tx) ([]string, error) {
	return s.q.SlackChannelOrganizations(ctx, tx)
}

// Message is where an invocation's approval message was posted.
type Message struct {
	Channel, TS string
}

// InsertMessage records where the approval message of org's invocation
// invocationID was posted.
func (s *Store) InsertMessage(ctx context.Context, org string, invocationID uuid.UUID, m Message) error {
	return s.q.SlackMessageInsert(ctx, s.pool, dbsqlc.SlackMessageInsertParams{
		InvocationID: invocationID, OrganizationID: org, Channel: m.Channel, Ts: m.TS,
	})
}

// Message returns where the approval message of invocationID was posted,
// and false when none was.
func (s *Store) Message(ctx context.Context, invocationID uuid.UUID) (Message, bool, error) {
	return s.MessageIn(ctx, s.pool, invocationID)
}

// MessageIn is Message on db (a decision's transaction).
func (s *Store) MessageIn(ctx context.Context, db dbutil.DB, invocationID uuid.UUID) (Message, bool, error) {
	m, err := s.q.SlackMessageGet(ctx, db, invocationID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Message{}, false, nil
	}
	return Message{Channel: m.Channel, TS: m.Ts}, err == nil, err
}
