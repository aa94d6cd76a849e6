// Command chartpilot takes a Helm chart to an operator that OLM installs and upgrades.
//
// The program's top: it may import any stage; only commands (cmd/...)
// import it.
package main
