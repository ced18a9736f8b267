package preview

import (
	"fmt"
	"strings"
)

// slackText bounds each text of the Slack blocks: a section's text may
// hold 3,000 characters.
const slackText = 2500

// SlackBlocks are the Block Kit blocks that show rec in a Slack approval
// message, above its raw params: the rendering when there is one, the
// note when it failed, nothing while none is recorded or the action
// renders none.
func SlackBlocks(rec *Record) []any {
	if rec == nil || rec.Status == StatusUnsupported {
		return nil
	}
	if rec.Status != StatusRendered || rec.Preview == nil {
		return []any{context("Preview unavailable: " + rec.Note + ". The raw params follow.")}
	}
	p := rec.Preview
	var b strings.Builder
	fmt.Fprintf(&b, "*Preview: %s*", escape(p.Title))
	for _, f := range p.Fields {
		fmt.Fprintf(&b, "\n*%s:* %s", escape(f.Name), escape(f.Value))
		if f.Description != "" {
			fmt.Fprintf(&b, " _(%s)_", escape(f.Description))
		}
	}
	for _, c := range p.Changes {
		fmt.Fprintf(&b, "\n*%s:* %s → %s", escape(c.Field), orNone(escape(c.Before)), orNone(escape(c.After)))
	}
	if pl := p.Plan; pl != nil {
		fmt.Fprintf(&b, "\n*Estimate:* %s, about %.0f rows, cost %.2f", escape(pl.Node), pl.Rows, pl.TotalCost)
		if len(pl.Relations) > 0 {
			fmt.Fprintf(&b, " (reads %s)", escape(strings.Join(pl.Relations, ", ")))
		}
	}
	if p.Text != "" {
		b.WriteString("\n")
		for _, line := range strings.Split(clip(p.Text), "\n") {
			b.WriteString("\n>" + escape(line))
		}
	}
	blocks := []any{map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": clip(b.String())}}}
	if len(p.Notes) > 0 {
		blocks = append(blocks, context(strings.Join(p.Notes, " ")))
	}
	return blocks
}

func context(text string) map[string]any {
	return map[string]any{"type": "context", "elements": []any{map[string]any{"type": "mrkdwn", "text": clip(escape(text))}}}
}

// escape escapes Slack's control characters, so a rendering cannot mention
// anyone or link anywhere by itself.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func orNone(s string) string {
	if s == "" {
		return "_none_"
	}
	return s
}

func clip(s string) string {
	r := []rune(s)
	if len(r) <= slackText {
		return s
	}
	return string(r[:slackText]) + "…"
}
