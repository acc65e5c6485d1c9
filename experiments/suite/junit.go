package suite

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// JUnit XML as CI systems read it (Jenkins, GitLab, GitHub test
// reporters): one <testsuite> holding, per suite entry, one testcase for
// its run and one per evaluated expectation and metric. Infrastructure
// failures and suite mistakes are <error>s, failed runs and regressions
// <failure>s, checks that could not be evaluated <skipped>.

// JUnitSuites is the document root.
type JUnitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Tests   int          `xml:"tests,attr"`
	Fail    int          `xml:"failures,attr"`
	Errors  int          `xml:"errors,attr"`
	Skipped int          `xml:"skipped,attr"`
	Time    string       `xml:"time,attr"`
	Suites  []JUnitSuite `xml:"testsuite"`
}

// JUnitSuite is the one testsuite.
type JUnitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Fail       int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []JUnitProperty `xml:"properties>property,omitempty"`
	Cases      []JUnitCase     `xml:"testcase"`
}

// JUnitProperty is a name/value pair of the suite.
type JUnitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// JUnitCase is one test case.
type JUnitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *JUnitProblem `xml:"failure,omitempty"`
	Error     *JUnitProblem `xml:"error,omitempty"`
	Skipped   *JUnitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// JUnitProblem is a failure or an error.
type JUnitProblem struct {
	Type    string `xml:"type,attr"`
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// JUnitSkipped marks a case that was not evaluated.
type JUnitSkipped struct {
	Message string `xml:"message,attr"`
}

// JUnit builds the JUnit document of a report.
func (r *Report) JUnit() JUnitSuites {
	s := JUnitSuite{Name: r.Suite, Time: secs(r.Seconds), Timestamp: r.Started.UTC().Format("2006-01-02T15:04:05")}
	s.Properties = append(s.Properties, JUnitProperty{Name: "suite_file", Value: r.File})
	if r.BaselineRoot != "" {
		s.Properties = append(s.Properties, JUnitProperty{Name: "baseline", Value: r.BaselineRoot})
	}
	for _, e := range r.Entries {
		class := r.Suite + "." + e.ID
		rc := JUnitCase{Name: fmt.Sprintf("run %s", e.Recipe), Classname: class, Time: secs(e.Seconds)}
		var out []string
		if e.Bundle != "" {
			out = append(out, "bundle: "+e.Bundle)
		}
		if e.Seed != nil {
			out = append(out, fmt.Sprintf("seed: %d", *e.Seed))
		}
		if e.Baseline != "" {
			out = append(out, fmt.Sprintf("baseline: %s (%s)", e.Baseline, e.BaselineHow))
		} else if e.BaselineHow != "" {
			out = append(out, "baseline: none: "+e.BaselineHow)
		}
		rc.SystemOut = strings.Join(out, "\n")
		msg := fmt.Sprintf("entry %s (%s): %s", e.ID, e.Where, e.Reason)
		switch e.Class {
		case ClassInfra:
			rc.Error = &JUnitProblem{Type: "infrastructure", Message: msg, Text: e.Reason}
		case ClassAborted:
			rc.Error = &JUnitProblem{Type: "aborted", Message: msg, Text: e.Reason}
		case ClassInput:
			rc.Error = &JUnitProblem{Type: "input", Message: msg, Text: e.Reason}
		case ClassFailed:
			rc.Failure = &JUnitProblem{Type: "run-failed", Message: msg, Text: e.Reason}
		case ClassNotRun:
			rc.Skipped = &JUnitSkipped{Message: e.Reason}
		}
		s.Cases = append(s.Cases, rc)
		for _, c := range e.Checks {
			cc := JUnitCase{Name: c.Name(), Classname: class, Time: "0"}
			switch c.Outcome {
			case Regression:
				cc.Failure = &JUnitProblem{Type: "regression", Message: c.Message, Text: c.Message}
			case Invalid:
				cc.Error = &JUnitProblem{Type: "suite", Message: c.Message, Text: c.Message}
			case Skipped:
				cc.Skipped = &JUnitSkipped{Message: c.Message}
			default:
				cc.SystemOut = c.Message
			}
			s.Cases = append(s.Cases, cc)
		}
	}
	for _, c := range s.Cases {
		s.Tests++
		switch {
		case c.Failure != nil:
			s.Fail++
		case c.Error != nil:
			s.Errors++
		case c.Skipped != nil:
			s.Skipped++
		}
	}
	return JUnitSuites{Name: r.Suite, Tests: s.Tests, Fail: s.Fail, Errors: s.Errors, Skipped: s.Skipped, Time: s.Time, Suites: []JUnitSuite{s}}
}

// WriteJUnit writes the report as JUnit XML.
func (r *Report) WriteJUnit(w io.Writer) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(r.JUnit()); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func secs(s float64) string { return fmt.Sprintf("%.3f", s) }
