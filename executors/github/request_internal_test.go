package github

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNextPage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		links []string
		want  int // 0: none
	}{
		{name: "None"},
		{name: "GitHub", links: []string{`<https://api.github.com/repositories/1/pulls?per_page=2&page=2>; rel="next", <https://api.github.com/repositories/1/pulls?per_page=2&page=5>; rel="last"`}, want: 2},
		{name: "LastPage", links: []string{`<https://api.github.com/repositories/1/pulls?page=1>; rel="first", <https://api.github.com/repositories/1/pulls?page=4>; rel="prev"`}},
		{name: "NextAfterOthers", links: []string{`<https://x/p?page=1>; rel="prev", <https://x/p?page=3>; rel="next"`}, want: 3},
		{name: "UnquotedAndListedRel", links: []string{`<https://x/p?page=7>; title="a"; rel=next`}, want: 7},
		{name: "RelList", links: []string{`<https://x/p?page=4>; rel="next last"`}, want: 4},
		{name: "SecondHeaderValue", links: []string{`<https://x/p?page=1>; rel="prev"`, `<https://x/p?page=9>; rel="next"`}, want: 9},
		{name: "NoPage", links: []string{`<https://x/p?cursor=abc>; rel="next"`}},
		{name: "BadPage", links: []string{`<https://x/p?page=-1>; rel="next"`}},
		{name: "Garbage", links: []string{`;;;, <>; rel=`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := nextPage(http.Header{"Link": tt.links})
			if tt.want == 0 {
				require.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			require.Equal(t, tt.want, *got)
		})
	}
}
