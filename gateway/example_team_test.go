package gateway_test

import (
	"fmt"
	"log"
	"net/http"

	fleets "github.com/mcpfleet/mcpfleet/fleet"
	"github.com/mcpfleet/mcpfleet/gateway"
)

// A policy: the first rule that names a person decides what they may use.
func ExampleParsePolicy() {
	p, err := gateway.ParsePolicy([]byte(`{
		"rules": [
			{"name": "admins", "groups": ["admin"]},
			{"name": "eng", "groups": ["eng"], "tools": {"deny": ["github/delete_*"]}}
		]
	}`))
	if err != nil {
		log.Fatal(err)
	}
	alice := &gateway.Identity{ID: "alice", Groups: []string{"eng"}}
	carol := &gateway.Identity{ID: "carol", Groups: []string{"eng", "admin"}}
	dave := &gateway.Identity{ID: "dave"}
	fmt.Println(p.Decide(alice, "github", "list_issues"))
	fmt.Println(p.Decide(alice, "github", "delete_repo"))
	fmt.Println(p.Decide(carol, "github", "delete_repo"))
	fmt.Println(p.Decide(dave, "github", "list_issues"))
	// Output:
	// allowed by rule "eng"
	// denied by rule "eng" (tools.deny "github/delete_*")
	// allowed by rule "admins"
	// denied by rule "default"
}

// A team's gateway: people log in at their authorization server, and each
// gets a fleet of their own from the template, under the policy.
func ExampleNewTeam() {
	tmpl, policy, _, err := gateway.LoadTeamConfig("team.json") // mcpServers, and a "policy"
	if err != nil {
		log.Fatal(err)
	}
	jwt, err := gateway.NewJWTValidator(gateway.JWTConfig{
		Issuers:  []string{"https://idp.example.com/realms/eng"},
		Audience: "https://mcp.example.com/mcp",
	})
	if err != nil {
		log.Fatal(err)
	}
	team, err := gateway.NewTeam(gateway.TeamConfig{
		Fleet:                fleets.Config{Template: tmpl},
		Authenticators:       []gateway.Authenticator{jwt},
		Resource:             "https://mcp.example.com/mcp",
		AuthorizationServers: []string{"https://idp.example.com/realms/eng"},
		Policy:               policy,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer team.Close()
	log.Fatal(http.ListenAndServeTLS(":443", "cert.pem", "key.pem", team))
}
