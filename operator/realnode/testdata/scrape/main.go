// Command scrape GETs a URL over HTTPS as a scraper in a pod does, with the
// bearer token in a file when one is named, and prints the response's
// status code and, for a 200, whether the body holds a metric of the
// operator's. It does not check the server's certificate: the operator's
// is self-signed, and what is under test is who may read.
package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: scrape URL [TOKEN-FILE]")
		os.Exit(2)
	}
	req, err := http.NewRequest(http.MethodGet, os.Args[1], nil)
	if err != nil {
		fail(err)
	}
	if len(os.Args) > 2 {
		token, err := os.ReadFile(os.Args[2])
		if err != nil {
			fail(err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		fail(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		fail(err)
	}
	fmt.Printf("status %d\n", resp.StatusCode)
	if resp.StatusCode == http.StatusOK {
		fmt.Printf("operator metrics %v\n", strings.Contains(string(body), "controller_runtime_reconcile_total"))
	}
}

func fail(err error) {
	fmt.Println("error", err)
	os.Exit(1)
}
