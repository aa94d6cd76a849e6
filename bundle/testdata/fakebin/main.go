// Command fakebin stands in for the chartpilot binary in operator image
// tests: a small static program that builds in seconds for any platform.
package main

import "fmt"

func main() { fmt.Println("fakebin") }
