package inject

import (
	"maps"
	"testing"
)

func TestChoose(t *testing.T) {
	rhel9 := Variant{Path: "/bin/mcd.rhel9", Match: map[string]string{"ID": "rhel", "VERSION_ID": "9*"}}
	rhel8 := Variant{Path: "/bin/mcd.rhel8", Match: map[string]string{"ID": "rhel", "VERSION_ID": "8.*"}}
	rhcos := Variant{Path: "/bin/mcd.rhcos", Match: map[string]string{"ID": "rhcos", "VARIANT_ID": "coreos"}}
	fallback := Variant{Path: "/bin/mcd"}
	tests := []struct {
		name     string
		variants []Variant
		host     map[string]string
		want     string
		wantErr  string
	}{
		{"rhel 9", []Variant{rhel8, rhel9}, map[string]string{"ID": "rhel", "VERSION_ID": "9.4"}, "/bin/mcd.rhel9", ""},
		{"rhel 8", []Variant{rhel8, rhel9}, map[string]string{"ID": "rhel", "VERSION_ID": "8.10"}, "/bin/mcd.rhel8", ""},
		{"first that fits", []Variant{rhel9, fallback}, map[string]string{"ID": "rhel", "VERSION_ID": "9.2"}, "/bin/mcd.rhel9", ""},
		{"fallback", []Variant{rhel9, fallback}, map[string]string{"ID": "debian", "VERSION_ID": "12"}, "/bin/mcd", ""},
		{"missing field fits no pattern", []Variant{rhcos}, map[string]string{"ID": "rhcos"}, "",
			`inject: no variant fits this host (ID="rhcos" VERSION_ID unset VARIANT_ID unset): /bin/mcd.rhcos wants ID="rhcos" VARIANT_ID="coreos"`},
		{"none", []Variant{rhel8, rhel9}, map[string]string{"ID": "debian", "VERSION_ID": "12"}, "",
			`inject: no variant fits this host (ID="debian" VERSION_ID="12"): /bin/mcd.rhel8 wants ID="rhel" VERSION_ID="8.*"; /bin/mcd.rhel9 wants ID="rhel" VERSION_ID="9*"`},
		{"no variants", nil, map[string]string{"ID": "rhel"}, "", "inject: no variants to choose from"},
		{"bad pattern", []Variant{fallback, {Path: "/bin/x", Match: map[string]string{"ID": "rhel["}}}, map[string]string{"ID": "rhel"}, "",
			`inject: variant 1 (/bin/x): ID pattern "rhel[": syntax error in pattern`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Choose(tt.variants, tt.host)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || v.Path != tt.want {
				t.Errorf("Choose = %+v, %v; want %s", v, err, tt.want)
			}
		})
	}
}

func TestParseVariant(t *testing.T) {
	tests := []struct {
		in, wantPath string
		wantMatch    map[string]string
		wantErr      string
	}{
		{"/bin/agent", "/bin/agent", map[string]string{}, ""},
		{"/bin/agent:", "/bin/agent", map[string]string{}, ""},
		{"/bin/agent.rhel9:ID=rhel,VERSION_ID=9*", "/bin/agent.rhel9", map[string]string{"ID": "rhel", "VERSION_ID": "9*"}, ""},
		{"/bin/a:ID=x,,VARIANT_ID=", "/bin/a", map[string]string{"ID": "x", "VARIANT_ID": ""}, ""},
		{":ID=x", "", nil, `":ID=x": the PATH before the first ':' is empty`},
		{"/bin/a:ID", "", nil, `"/bin/a:ID": "ID" must be FIELD=PATTERN`},
		{"/bin/a:=x", "", nil, `"/bin/a:=x": "=x" must be FIELD=PATTERN`},
	}
	for _, tt := range tests {
		v, err := ParseVariant(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseVariant(%q): %v, want error %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || v.Path != tt.wantPath || !maps.Equal(v.Match, tt.wantMatch) {
			t.Errorf("ParseVariant(%q) = %+v, %v; want %s %v", tt.in, v, err, tt.wantPath, tt.wantMatch)
		}
	}
}
