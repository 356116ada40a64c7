package llm

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// PartKind says what a Part holds.
type PartKind int

const (
	// PartText is text: a text content, an embedded text resource, a
	// resource link described in words, or structured content as JSON.
	PartText PartKind = iota
	// PartImage is an image: MIMEType and Data (decoded bytes).
	PartImage
	// PartAudio is audio: MIMEType and Data.
	PartAudio
	// PartBlob is an embedded binary resource: URI, MIMEType and Data.
	PartBlob
)

// Part is one piece of a tool result, in a form every provider adapter
// maps to its own blocks.
type Part struct {
	Kind     PartKind
	Text     string
	MIMEType string
	Data     []byte
	URI      string
	// Structured marks the JSON text of the result's structuredContent.
	Structured bool
}

// Parts splits res into Parts, in the result's order. Structured content
// comes last as one JSON text part, unless a text part already holds the
// same JSON (servers are asked to send both, and many do). Content a
// provider might not take whole is decoded here and left to the adapter:
// Describe gives the words for a part it has to leave out.
func Parts(res *mcp.CallToolResult) []Part {
	if res == nil {
		return nil
	}
	var out []Part
	for _, c := range res.Content {
		switch c := c.(type) {
		case mcp.TextContent:
			out = append(out, Part{Kind: PartText, Text: c.Text})
		case *mcp.TextContent:
			out = append(out, Part{Kind: PartText, Text: c.Text})
		case mcp.ImageContent:
			out = append(out, binaryPart(PartImage, c.MIMEType, c.Data, ""))
		case *mcp.ImageContent:
			out = append(out, binaryPart(PartImage, c.MIMEType, c.Data, ""))
		case mcp.AudioContent:
			out = append(out, binaryPart(PartAudio, c.MIMEType, c.Data, ""))
		case *mcp.AudioContent:
			out = append(out, binaryPart(PartAudio, c.MIMEType, c.Data, ""))
		case mcp.EmbeddedResource:
			out = append(out, resourcePart(c.Resource))
		case *mcp.EmbeddedResource:
			out = append(out, resourcePart(c.Resource))
		case mcp.ResourceLink:
			out = append(out, Part{Kind: PartText, Text: linkText(c), URI: c.URI})
		case *mcp.ResourceLink:
			out = append(out, Part{Kind: PartText, Text: linkText(*c), URI: c.URI})
		default:
			b, _ := json.Marshal(c)
			out = append(out, Part{Kind: PartText, Text: string(b)})
		}
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			b = fmt.Appendf(nil, "%q", fmt.Sprint(res.StructuredContent))
		}
		dup := false
		for _, p := range out {
			if p.Kind == PartText && jsonEqual(p.Text, b) {
				dup = true
			}
		}
		if !dup {
			out = append(out, Part{Kind: PartText, Text: string(b), Structured: true})
		}
	}
	return out
}

func binaryPart(kind PartKind, mime, data, uri string) Part {
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return Part{Kind: PartText, Text: fmt.Sprintf("[%s content that is not valid base64: %v]", mime, err)}
	}
	return Part{Kind: kind, MIMEType: mime, Data: b, URI: uri}
}

func resourcePart(r mcp.ResourceContents) Part {
	switch r := r.(type) {
	case mcp.TextResourceContents:
		return Part{Kind: PartText, Text: r.Text, URI: r.URI, MIMEType: r.MIMEType}
	case *mcp.TextResourceContents:
		return Part{Kind: PartText, Text: r.Text, URI: r.URI, MIMEType: r.MIMEType}
	case mcp.BlobResourceContents:
		return blobPart(r)
	case *mcp.BlobResourceContents:
		return blobPart(*r)
	}
	return Part{Kind: PartText, Text: "[a resource of an unknown kind]"}
}

func blobPart(r mcp.BlobResourceContents) Part {
	kind := PartBlob
	if isImage(r.MIMEType) {
		kind = PartImage
	}
	return binaryPart(kind, r.MIMEType, r.Blob, r.URI)
}

func isImage(mime string) bool { return len(mime) > 6 && mime[:6] == "image/" }

func linkText(l mcp.ResourceLink) string {
	s := "resource " + l.URI
	if l.Name != "" {
		s += " (" + l.Name + ")"
	}
	if l.Description != "" {
		s += ": " + l.Description
	}
	return s
}

// Describe is the text that stands for a part a provider cannot take (an
// image in a Chat Completions tool message, audio anywhere), so that the
// model knows something was there.
func Describe(p Part) string {
	switch p.Kind {
	case PartImage:
		return fmt.Sprintf("[image %s, %d bytes, not shown]", p.MIMEType, len(p.Data))
	case PartAudio:
		return fmt.Sprintf("[audio %s, %d bytes, not shown]", p.MIMEType, len(p.Data))
	case PartBlob:
		return fmt.Sprintf("[binary resource %s %s, %d bytes, not shown]", p.URI, p.MIMEType, len(p.Data))
	}
	return p.Text
}

// Text joins the parts as one string, describing the binary ones: the
// result for a provider whose tool results are text only.
func Text(parts []Part) string {
	var s string
	for i, p := range parts {
		if i > 0 {
			s += "\n"
		}
		s += Describe(p)
	}
	return s
}

func jsonEqual(text string, b []byte) bool {
	var x, y any
	if json.Unmarshal([]byte(text), &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	bx, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return string(bx) == string(by)
}
