// Command sharetest is the franz-go (github.com/twmb/franz-go/pkg/kgo) share-group (KIP-932) driver of
// tests/test_share_groups.py: K share consumers of one group in one process, each a kgo.Client with
// kgo.ShareGroup, acknowledging every record explicitly (MarkAcks then FlushAcks after every poll). A record
// whose value is --release is RELEASEd on its first delivery and ACCEPTed afterwards; every other one is
// ACCEPTed. It stops once --count distinct records were accepted without an acknowledgement error, or after
// --max-seconds, and prints one JSON object:
//
//	{"deliveries": [[consumer, offset, delivery count], ...], "accepted": [offset, ...], "errors": ["...", ...]}
//
// Usage: sharetest --bootstrap H:P --group G --topic T [--consumers K] [--count N] [--release VALUE]
//
//	[--max-seconds S]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type result struct {
	Deliveries [][3]int64 `json:"deliveries"`
	Accepted   []int64    `json:"accepted"`
	Errors     []string   `json:"errors"`
}

func main() {
	bootstrap := flag.String("bootstrap", "127.0.0.1:9092", "bootstrap server")
	group := flag.String("group", "", "share group id")
	topic := flag.String("topic", "", "topic")
	consumers := flag.Int("consumers", 1, "share consumers in this process")
	count := flag.Int("count", 1, "distinct records to accept before stopping")
	release := flag.String("release", "", "value to release on its first delivery")
	maxSeconds := flag.Int("max-seconds", 60, "bound on the run")
	flag.Parse()

	var mu sync.Mutex
	res := result{Deliveries: [][3]int64{}, Accepted: []int64{}, Errors: []string{}}
	accepted := map[int64]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(*maxSeconds)*time.Second)
	defer cancel()
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted) >= *count
	}

	var wg sync.WaitGroup
	for i := 0; i < *consumers; i++ {
		wg.Add(1)
		go func(id int64) {
			defer wg.Done()
			cl, err := kgo.NewClient(
				kgo.SeedBrokers(*bootstrap),
				kgo.ShareGroup(*group),
				kgo.ConsumeTopics(*topic),
				kgo.ClientID(fmt.Sprintf("franz-%d", id)),
				kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
					if err := rs.Error(); err != nil {
						mu.Lock()
						res.Errors = append(res.Errors, "ack: "+err.Error())
						mu.Unlock()
					}
				}),
			)
			if err != nil {
				mu.Lock()
				res.Errors = append(res.Errors, err.Error())
				mu.Unlock()
				return
			}
			defer cl.Close()
			for !done() && ctx.Err() == nil {
				poll, pollCancel := context.WithTimeout(ctx, 500*time.Millisecond)
				fetches := cl.PollRecords(poll, 100)
				pollCancel()
				fetches.EachError(func(_ string, _ int32, err error) {
					if ctx.Err() == nil && err != context.DeadlineExceeded && err != context.Canceled {
						mu.Lock()
						res.Errors = append(res.Errors, err.Error())
						mu.Unlock()
					}
				})
				var acceptNow []int64
				fetches.EachRecord(func(r *kgo.Record) {
					dc := int64(r.DeliveryCount())
					mu.Lock()
					res.Deliveries = append(res.Deliveries, [3]int64{id, r.Offset, dc})
					mu.Unlock()
					if string(r.Value) == *release && dc == 1 {
						cl.MarkAcks(kgo.AckRelease, r)
					} else {
						cl.MarkAcks(kgo.AckAccept, r)
						acceptNow = append(acceptNow, r.Offset)
					}
				})
				if len(acceptNow) == 0 && fetches.NumRecords() == 0 {
					continue
				}
				if err := cl.FlushAcks(ctx); err != nil {
					mu.Lock()
					res.Errors = append(res.Errors, "flush: "+err.Error())
					mu.Unlock()
					continue
				}
				mu.Lock()
				for _, o := range acceptNow {
					if accepted[o] {
						res.Errors = append(res.Errors, fmt.Sprintf("offset %d accepted twice", o))
					}
					accepted[o] = true
					res.Accepted = append(res.Accepted, o)
				}
				mu.Unlock()
			}
		}(int64(i))
	}
	wg.Wait()
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	if ctx.Err() != nil && !done() {
		os.Exit(3)
	}
}
