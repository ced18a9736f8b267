// Package sealed records the rotations of the keys that seal stored
// secrets (`outboxd secrets rotate`, which re-seals through sealedstore)
// in each organization's audit trail.
package sealed

import (
	"context"
	"maps"
	"slices"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/sealed/sealedstore"
)

// ActionRotate is the audit trail's action of a rotation.
const ActionRotate = "secrets.rotate"

// Rotation is one run of `outboxd secrets rotate`.
type Rotation struct {
	// Actor is who ran it (the operator, from the host it ran on).
	Actor audit.Actor
	// Primary is the id of the key the values were re-sealed with.
	Primary string
	// Rotated are the rotation's counts (sealedstore.Store.Rotate), Status
	// those of the status taken after it (Store.Status).
	Rotated, Status []sealedstore.Count
}

// Record appends an entry to the audit trail of each organization with a
// value re-sealed: the ids of the keys its values were sealed with (before)
// and of the key they are sealed with now (after), how many values of each
// kind were re-sealed, left as written meanwhile, unreadable or still on
// another key, and whether the organization's values are all on the
// primary key now ("complete"). Only key ids are recorded, never a key. It
// returns the organizations recorded, in order.
func Record(ctx context.Context, trail audit.Recorder, r *Rotation) ([]string, error) {
	rotated, status := sealedstore.ByOrg(r.Rotated), sealedstore.ByOrg(r.Status)
	var done []string
	for _, org := range slices.Sorted(maps.Keys(rotated)) {
		o := rotated[org]
		resealed := 0
		for _, n := range o.Resealed {
			resealed += n
		}
		if resealed == 0 {
			continue
		}
		remaining, unreadable := 0, o.Unreadable
		if s := status[org]; s != nil {
			remaining, unreadable = s.Remaining, s.Unreadable
		}
		actor := r.Actor
		err := trail.Record(ctx, &audit.Change{
			Org: org, Actor: &actor, Action: ActionRotate, TargetType: "secrets_key", TargetID: r.Primary,
			Before: map[string]any{"key_ids": o.From},
			After: map[string]any{
				"key_id": r.Primary, "resealed": o.Resealed, "resealed_total": resealed,
				"changed_meanwhile": o.Changed, "unreadable": unreadable,
				"remaining_on_other_keys": remaining, "complete": remaining == 0 && unreadable == 0,
			},
		})
		if err != nil {
			return done, err
		}
		done = append(done, org)
	}
	return done, nil
}
