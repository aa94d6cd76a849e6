package reconciler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
)

// An outage is two lines however many CRs retry through it: its start,
// with the error, and its end, with how long, how many CRs and reconciles.
func TestOutageLogsStartAndEndOnce(t *testing.T) {
	var lines []string
	o := NewOutage(funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{}))
	now := time.Unix(1000, 0)
	o.now = func() time.Time { return now }
	refused := errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")

	o.Reached() // no outage: nothing to say
	for i := range 30 {
		o.unreachable("Web ns/a", refused)
		o.unreachable("Web ns/b", refused)
		if i%10 == 0 {
			o.unreachable("Site ns/a", refused)
		}
		now = now.Add(time.Second)
	}
	o.Reached()
	o.Reached()
	o.unreachable("Web ns/a", refused) // a second outage
	o.Reached()

	want := []string{
		`"msg"="` + OutageStartMessage + `" "error"="dial tcp 127.0.0.1:6443: connect: connection refused"`,
		`"level"=0 "msg"="` + OutageEndMessage + `" "after"="30s" "crs"=3 "reconciles"=63`,
		`"msg"="` + OutageStartMessage + `" "error"="dial tcp 127.0.0.1:6443: connect: connection refused"`,
		`"level"=0 "msg"="` + OutageEndMessage + `" "after"="0s" "crs"=1 "reconciles"=1`,
	}
	if got := strings.Join(lines, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("logged:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	var none *Outage
	none.unreachable("Web ns/a", refused)
	none.Reached()
}
