package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/outboxd/outboxd/executors"
)

// mention matches Slack's references in mrkdwn: <@U…> users,
// <#C…|name> channels and <!here> special mentions, each with an
// optional |label.
var mention = regexp.MustCompile(`<([@#!])([A-Za-z0-9_]+)(?:\|([^>]*))?>`)

// maxMentions bounds the users.info look-ups of one preview.
const maxMentions = 20

// previewMessage renders send_message as Slack will show it: the channel's
// name (conversations.info) and the user mentions' names (users.info),
// where the credential's scopes allow; an id it cannot resolve stays as it
// is, with a note saying why.
func (s *client) previewMessage(ctx context.Context, p *SendMessageParams, ec executors.ExecContext) (*executors.Preview, error) {
	if ec.Token == "" {
		return nil, &executors.Error{Code: "not_authed", Message: "no Slack token is available; connect Slack first"}
	}
	out := &executors.Preview{Kind: executors.PreviewMessage}
	notes := map[string]bool{}
	note := func(n string) {
		if !notes[n] {
			notes[n] = true
			out.Notes = append(out.Notes, n)
		}
	}
	channel := p.Channel
	if !strings.HasPrefix(channel, "#") {
		name, err := s.lookupName(ctx, ec, "conversations.info", "channel", channel)
		switch {
		case err != nil && !lookupNote(err, "channel "+channel, note):
			return nil, err
		case name != "":
			channel = "#" + name
		}
	}
	out.Title = "Message to " + channel
	out.Fields = append(out.Fields, executors.PreviewField{Name: "channel", Value: channel})
	if p.ThreadTS != "" {
		out.Title += " (reply in thread)"
		out.Fields = append(out.Fields, executors.PreviewField{Name: "thread_ts", Value: p.ThreadTS})
	}

	users := map[string]string{}
	var failure error
	looked := 0
	out.Text = mention.ReplaceAllStringFunc(p.Text, func(m string) string {
		g := mention.FindStringSubmatch(m)
		kind, id, label := g[1], g[2], g[3]
		switch kind {
		case "!":
			return "@" + strings.TrimPrefix(id, "sub")
		case "#":
			if label != "" {
				return "#" + label
			}
			return "#" + id
		}
		if name, ok := users[id]; ok {
			return "@" + name
		}
		if failure != nil || looked >= maxMentions {
			return "@" + id
		}
		looked++
		name, err := s.lookupName(ctx, ec, "users.info", "user", id)
		if err != nil && !lookupNote(err, "user "+id, note) {
			failure = err
		}
		if name == "" {
			name = id
		}
		users[id] = name
		return "@" + name
	})
	if failure != nil {
		return nil, failure
	}
	return out, nil
}

// lookupNote turns a look-up's refusal into a note: a scope the credential
// lacks, or an id Slack does not know. It reports whether err was one;
// any other failure fails the preview.
func lookupNote(err error, what string, note func(string)) bool {
	var e *executors.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case "missing_scope":
		note(what + " is shown by its id: " + e.Message)
	case "channel_not_found", "user_not_found", "user_not_visible":
		note(what + " is shown by its id: Slack answered " + e.Code)
	default:
		return false
	}
	return true
}

// lookupName calls a Web API info method (conversations.info, users.info)
// with arg=id and returns the name it answers: a user's display name, else
// real name, else name.
func (s *client) lookupName(ctx context.Context, ec executors.ExecContext, method, arg, id string) (string, error) {
	form := url.Values{arg: {id}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.baseURL+"/"+method, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("slack: building %s request: %w", method, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	raw, _, err := s.call(ctx, ec, req)
	if err != nil {
		return "", err
	}
	var answer struct {
		Channel struct {
			Name string `json:"name"`
		} `json:"channel"`
		User struct {
			Name    string `json:"name"`
			Profile struct {
				DisplayName string `json:"display_name"`
				RealName    string `json:"real_name"`
			} `json:"profile"`
		} `json:"user"`
	}
	if json.Unmarshal(raw, &answer) != nil {
		return "", nil // an answer without the object: the id stays
	}
	if arg == "channel" {
		return answer.Channel.Name, nil
	}
	for _, n := range []string{answer.User.Profile.DisplayName, answer.User.Profile.RealName, answer.User.Name} {
		if n != "" {
			return n, nil
		}
	}
	return "", nil
}
