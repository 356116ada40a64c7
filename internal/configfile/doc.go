// Package configfile is mcpfleet's command line's side of a config file:
// reading one whose commands are going to be run (Load refuses a file
// another user could have written), and following it while a serve runs
// (Watcher). The library's parser is client.LoadConfig; this package is
// what a program that runs a user's file adds around it.
package configfile
